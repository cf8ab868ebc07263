package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// The writes of a run: each one a part of a transaction (create,
// checkpoint, move, suspend), which CreateRun, Checkpoint, MoveCall and
// Suspend commit alone and Apply commits together.

// Apply implements store.Store.
func (s *DB) Apply(ctx context.Context, lease store.Lease, w store.Writes, ev ...store.Event) error {
	now := s.now()
	var idle error
	err := s.tx(ctx, func(tx *txn) error {
		var err error
		idle, err = applyIn(ctx, tx, now, lease, w, ev)
		return err
	})
	if err != nil {
		return err
	}
	stamped(now, w)
	if w.Suspend != nil && idle == nil {
		w.Suspend.Status, w.Suspend.UpdatedAt = store.Suspended, fromMS(ms(now))
	}
	return idle
}

// applyIn writes w in tx, as CreateRun, Checkpoint, MoveCall and Suspend
// would one after the other, writing a run's row once where they would
// write it twice: a run created and checkpointed together is inserted as
// checkpointed; a run checkpointed and then suspended is updated once,
// suspended or, when not idle (store.ErrNotIdle, returned as idle), as
// checkpointed.
func applyIn(ctx context.Context, tx *txn, now time.Time, lease store.Lease, w store.Writes, ev []store.Event) (idle, err error) {
	update := w.Run != nil
	for _, n := range w.Create {
		created := n.Run == w.Run
		if err := createIn(ctx, tx, now, n.Run, n.Spec, lease, created && n.Run.Status.Stopped()); err != nil {
			return nil, fmt.Errorf("create run %s: %w", n.Run.ID, err)
		}
		update = update && !created
	}
	last := update && w.Suspend != nil && w.Suspend.ID == w.Run.ID
	if last {
		// Its row's lock first, as the checkpoint's update would take it.
		if err := tx.lockRun(ctx, w.Run.ID); err != nil {
			return nil, fmt.Errorf("lock run %s: %w", w.Run.ID, err)
		}
	}
	if w.Run != nil {
		if err := checkpointIn(ctx, tx, now, lease, w.Run, w.Calls, update && !last); err != nil {
			return nil, fmt.Errorf("checkpoint run %s: %w", w.Run.ID, err)
		}
	}
	for _, m := range w.Moves {
		if err := moveIn(ctx, tx, now, lease, m); err != nil {
			return nil, fmt.Errorf("%s call %s: %w", m.To, m.CallID, err)
		}
	}
	if err := appendEvents(ctx, tx, now, ev); err != nil {
		return nil, err
	}
	switch {
	case last:
		idle = suspendLast(ctx, tx, now, lease, w.Run)
	case w.Suspend != nil:
		idle = suspendIn(ctx, tx, now, lease, w.Suspend.ID)
	}
	if !errors.Is(idle, store.ErrNotIdle) {
		return nil, idle
	}
	return idle, nil
}

// stamped sets, in the caller's values, what committing w changed.
func stamped(now time.Time, w store.Writes) {
	at := fromMS(ms(now))
	for _, n := range w.Create {
		n.Run.CreatedAt, n.Run.UpdatedAt = at, at
	}
	if w.Run != nil {
		w.Run.UpdatedAt = at
		for _, c := range w.Calls {
			c.RunID, c.CreatedAt, c.UpdatedAt = w.Run.ID, at, at
		}
	}
}

// CreateRun implements store.Store.
func (s *DB) CreateRun(ctx context.Context, r *store.Run, spec []byte, lease store.Lease) error {
	now := s.now()
	if err := s.tx(ctx, func(tx *txn) error { return createIn(ctx, tx, now, r, spec, lease, false) }); err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	stamped(now, store.Writes{Create: []store.NewRun{{Run: r}}})
	return nil
}

// createIn inserts a new run, and its spec snapshot when new; held by
// lease unless released.
func createIn(ctx context.Context, tx *txn, now time.Time, r *store.Run, spec []byte, lease store.Lease, released bool) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO specs(hash, body) VALUES(?, ?) ON CONFLICT DO NOTHING`, r.SpecHash, spec); err != nil {
		return err
	}
	if r.RootID == "" {
		r.RootID = r.ID
	}
	if r.Path == nil {
		r.Path = []string{r.Agent}
	}
	path, _ := json.Marshal(r.Path)
	if len(r.Path) == 1 && r.Path[0] == r.Agent {
		path = nil
	}
	var parent, root any
	if r.ParentID != "" {
		parent = r.ParentID
	}
	if r.RootID != r.ID {
		root = r.RootID
	}
	var owner, expires any
	if lease.Owner != "" && !released {
		owner, expires = lease.Owner, ms(now.Add(lease.TTL))
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO runs(`+runCols+`, owner, lease_expires)
		VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Agent, r.Status, r.Input, r.Output, r.Error, r.SpecHash, r.Step, r.State,
		ms(now), ms(now), parent, r.ParentCall, root, string(path),
		r.Usage.ModelCalls, r.Usage.InputTokens, r.Usage.OutputTokens, r.StartedBy, owner, expires)
	if err != nil {
		return err
	}
	return recordRequest(ctx, tx, now, r.Request, r.ID)
}

// Checkpoint implements store.Store.
func (s *DB) Checkpoint(ctx context.Context, lease store.Lease, r *store.Run, newCalls []*store.Call, ev ...store.Event) error {
	now := s.now()
	err := s.tx(ctx, func(tx *txn) error {
		if err := checkpointIn(ctx, tx, now, lease, r, newCalls, true); err != nil {
			return err
		}
		return appendEvents(ctx, tx, now, ev)
	})
	if err != nil {
		return fmt.Errorf("checkpoint run %s: %w", r.ID, err)
	}
	stamped(now, store.Writes{Run: r, Calls: newCalls})
	return nil
}

// checkpointIn saves a run lease holds, unless update is false (its row
// is written otherwise), and inserts its new calls.
func checkpointIn(ctx context.Context, tx *txn, now time.Time, lease store.Lease, r *store.Run, newCalls []*store.Call, update bool) error {
	if update {
		if err := saveRun(ctx, tx, now, lease, r, r.Status); err != nil {
			return err
		}
	}
	for _, c := range newCalls {
		_, err := tx.ExecContext(ctx, `INSERT INTO calls(`+callCols+`)
			VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, c.ID, c.Seq, c.Step, c.Tool, string(c.Args), c.Status, c.Kind, c.Result, flag(c.ResultObject),
			store.EncodeGate(c.Gate), c.GateError, text(c.Payload), text(c.Resume), text(c.ResumeSchema), msOrNil(c.Deadline), ms(now), ms(now),
			c.Needed, c.Approvals, msOrNil(c.StartedAt), msOrNil(c.FinishedAt))
		if err != nil {
			return err
		}
		tx.denied(r.ID, c, now)
	}
	return nil
}

// saveRun writes a run lease holds as checkpointed, with status; a
// stopped one is released.
func saveRun(ctx context.Context, tx *txn, now time.Time, lease store.Lease, r *store.Run, status store.Status) error {
	owner, expires := any(lease.Owner), any(ms(now.Add(lease.TTL)))
	if status.Stopped() || status == store.Suspended {
		owner, expires = nil, nil
	}
	res, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, output = ?, error = ?, step = ?, state = ?,
		model_calls = ?, tokens_in = ?, tokens_out = ?, updated_at = ?, owner = ?, lease_expires = ? WHERE id = ? AND owner = ?`,
		status, r.Output, r.Error, r.Step, r.State, r.Usage.ModelCalls, r.Usage.InputTokens, r.Usage.OutputTokens,
		ms(now), owner, expires, r.ID, lease.Owner)
	return one(res, err, store.ErrLeaseLost)
}

// suspendLast checkpoints a run lease holds, its row locked, and
// suspends it, in one write of its row, as checkpointIn then suspendIn
// would; not idle, it is checkpointed only, and the answer is
// store.ErrNotIdle.
func suspendLast(ctx context.Context, tx *txn, now time.Time, lease store.Lease, r *store.Run) error {
	status, idle := store.Suspended, idleIn(ctx, tx, r.ID)
	switch {
	case errors.Is(idle, store.ErrNotIdle):
		status = r.Status
	case idle != nil:
		return idle
	}
	if err := saveRun(ctx, tx, now, lease, r, status); err != nil {
		return fmt.Errorf("checkpoint run %s: %w", r.ID, err)
	}
	return idle
}

// Suspend implements store.Store.
func (s *DB) Suspend(ctx context.Context, lease store.Lease, r *store.Run, ev ...store.Event) error {
	now := s.now()
	err := s.tx(ctx, func(tx *txn) error {
		if err := suspendIn(ctx, tx, now, lease, r.ID); err != nil {
			return err
		}
		return appendEvents(ctx, tx, now, ev)
	})
	if err != nil {
		return fmt.Errorf("suspend run %s: %w", r.ID, err)
	}
	r.Status, r.UpdatedAt = store.Suspended, fromMS(ms(now))
	return nil
}

// suspendIn marks a run lease holds suspended and releases it, provided
// it waits on a pending call and has no approved call to run; else
// store.ErrNotIdle, having changed nothing.
func suspendIn(ctx context.Context, tx *txn, now time.Time, lease store.Lease, runID string) error {
	if err := tx.lockRun(ctx, runID); err != nil {
		return err
	}
	if err := idleIn(ctx, tx, runID); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'suspended', owner = NULL, lease_expires = NULL,
		updated_at = ? WHERE id = ? AND owner = ?`, ms(now), runID, lease.Owner)
	return one(res, err, store.ErrLeaseLost)
}

// idleIn is nil when a run waits on a pending call and has no approved
// call to run; else store.ErrNotIdle.
func idleIn(ctx context.Context, tx *txn, runID string) error {
	var pending, approved int
	err := tx.QueryRowContext(ctx, `SELECT
			COALESCE(SUM(CASE WHEN status IN ('pending', 'interrupted') THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN status = 'approved' THEN 1 ELSE 0 END), 0)
		FROM calls WHERE run_id = ?`, runID).Scan(&pending, &approved)
	if err != nil {
		return err
	}
	if pending == 0 || approved > 0 {
		return store.ErrNotIdle
	}
	return nil
}

// A call's start is its move to executing; its end, its move from there
// to a result (an interruption's moment is not the tool's end).
const moveSQL = `UPDATE calls SET status = ?, result = ?, result_object = ?, kind = ?, payload = COALESCE(?, payload),
		resume_schema = COALESCE(?, resume_schema), deadline = ?, updated_at = ?,
		started_at = COALESCE(?, started_at), finished_at = ?,
		gate = COALESCE(?, gate), approvals = CASE WHEN ? = 1 THEN 0 ELSE approvals END
		WHERE run_id = ? AND call_id = ? AND status = ?
		AND EXISTS (SELECT 1 FROM runs WHERE id = ? AND owner = ?)`

// moveArgs are moveSQL's arguments for m.
func moveArgs(now time.Time, lease store.Lease, m store.Move) []any {
	var started, finished any
	switch {
	case m.To == store.CallExecuting, m.To == store.CallPending && m.Kind == store.KindDelegation:
		started = ms(now) // a tool's start, or a sub-agent's
	case m.From == store.CallExecuting && (m.To == store.CallSucceeded || m.To == store.CallFailed):
		finished = ms(now)
	}
	var gate any
	if m.Gate != nil {
		gate = store.EncodeGate(*m.Gate)
	}
	return []any{m.To, m.Result, flag(m.ResultObject), m.Kind, text(m.Payload), text(m.ResumeSchema), msOrNil(m.Deadline), ms(now),
		started, finished, gate, flag(m.Gate != nil), m.RunID, m.CallID, m.From, m.RunID, lease.Owner}
}

// MoveCall implements store.Store.
func (s *DB) MoveCall(ctx context.Context, lease store.Lease, m store.Move, ev ...store.Event) error {
	now := s.now()
	if len(ev) == 0 && m.From != store.CallExecuting { // an outcome goes into the audit chain
		// One conditional statement is atomic by itself: no transaction
		// around it, one round trip (the move to executing, before a
		// tool starts). A miss goes the long way, to say why.
		if res, err := s.exec(ctx, moveSQL, moveArgs(now, lease, m)...); err != nil {
			return fmt.Errorf("%s call %s: %w", m.To, m.CallID, err)
		} else if n, err := res.RowsAffected(); err == nil && n == 1 {
			return nil
		}
	}
	err := s.tx(ctx, func(tx *txn) error {
		if err := moveIn(ctx, tx, now, lease, m); err != nil {
			return err
		}
		return appendEvents(ctx, tx, now, ev)
	})
	if err != nil {
		return fmt.Errorf("%s call %s: %w", m.To, m.CallID, err)
	}
	return nil
}

// moveIn makes one transition of a call of a run lease holds: a
// *store.ConflictError when the call is not in m.From.
func moveIn(ctx context.Context, tx *txn, now time.Time, lease store.Lease, m store.Move) error {
	res, err := tx.ExecContext(ctx, moveSQL, moveArgs(now, lease, m)...)
	if err := one(res, err, store.ErrConflict); errors.Is(err, store.ErrConflict) {
		if err := holds(ctx, tx, lease, m.RunID); err != nil {
			return err
		}
		return conflict(ctx, tx, m.RunID, m.CallID)
	} else if err != nil {
		return err
	}
	tx.outcome(m, now)
	return nil
}

// holds checks that lease holds the run.
func holds(ctx context.Context, tx *txn, lease store.Lease, runID string) error {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE id = ? AND owner = ?`, runID, lease.Owner).Scan(&n)
	if err == nil && n != 1 {
		err = store.ErrLeaseLost
	}
	return err
}
