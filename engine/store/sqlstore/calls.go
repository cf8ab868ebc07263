package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

const callCols = `run_id, call_id, seq, step, tool, args, status, kind, result, result_object, gate, gate_error, payload, resume, resume_schema, deadline, created_at, updated_at, needed, approvals, started_at, finished_at`

func scanCall(sc scanner) (*store.Call, error) {
	var c store.Call
	var args, gate string
	var payload, resume, resumeSchema sql.NullString
	var deadline, started, finished sql.NullInt64
	var created, updated int64
	if err := sc.Scan(&c.RunID, &c.ID, &c.Seq, &c.Step, &c.Tool, &args, &c.Status, &c.Kind, &c.Result, &c.ResultObject,
		&gate, &c.GateError, &payload, &resume, &resumeSchema, &deadline, &created, &updated, &c.Needed, &c.Approvals,
		&started, &finished); err != nil {
		return nil, err
	}
	if started.Valid {
		c.StartedAt = fromMS(started.Int64)
	}
	if finished.Valid {
		c.FinishedAt = fromMS(finished.Int64)
	}
	c.Args, c.Gate = []byte(args), store.DecodeGate(gate)
	c.Payload, c.Resume, c.ResumeSchema = raw(payload), raw(resume), raw(resumeSchema)
	if deadline.Valid {
		c.Deadline = fromMS(deadline.Int64)
	}
	c.CreatedAt, c.UpdatedAt = fromMS(created), fromMS(updated)
	return &c, nil
}

// querier runs reads: the store itself (reader) or a transaction.
type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

func queryCalls(ctx context.Context, q querier, query string, args ...any) ([]*store.Call, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.Call
	for rows.Next() {
		c, err := scanCall(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// Calls implements store.Store.
func (s *DB) Calls(ctx context.Context, runID string) ([]*store.Call, error) {
	cs, err := queryCalls(ctx, reader{s}, `SELECT `+callCols+` FROM calls WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("calls of run %s: %w", runID, err)
	}
	return cs, nil
}

// Pending implements store.Store.
func (s *DB) Pending(ctx context.Context, runIDs []string) (map[string][]*store.Call, error) {
	out := map[string][]*store.Call{}
	const batch = 500
	for len(runIDs) > 0 {
		n := min(batch, len(runIDs))
		args := make([]any, n)
		for i, id := range runIDs[:n] {
			args[i] = id
		}
		runIDs = runIDs[n:]
		cs, err := queryCalls(ctx, reader{s}, `SELECT `+callCols+` FROM calls WHERE status IN ('pending', 'interrupted') AND run_id IN (?`+
			strings.Repeat(", ?", n-1)+`) ORDER BY run_id, seq`, args...)
		if err != nil {
			return nil, fmt.Errorf("pending calls: %w", err)
		}
		for _, c := range cs {
			out[c.RunID] = append(out[c.RunID], c)
		}
	}
	return out, nil
}

// TreePending implements store.Store.
func (s *DB) TreePending(ctx context.Context, rootID string) ([]*store.Call, error) {
	cs, err := queryCalls(ctx, reader{s}, `SELECT `+callCols+` FROM calls
		WHERE status IN ('pending', 'interrupted') AND kind != 'delegation' AND run_id IN (SELECT id FROM runs WHERE id = ? OR root_id = ?)
		ORDER BY created_at, run_id, seq`, rootID, rootID)
	if err != nil {
		return nil, fmt.Errorf("pending calls of tree %s: %w", rootID, err)
	}
	return cs, nil
}

// Settle implements store.Store.
func (s *DB) Settle(ctx context.Context, lease store.Lease, m store.Move, ev ...store.Event) (bool, error) {
	now := s.now()
	var claimed bool
	err := s.tx(ctx, func(tx *txn) error {
		if err := tx.lockRun(ctx, m.RunID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE calls SET status = ?, result = ?, kind = '', deadline = NULL, updated_at = ?, finished_at = ?
			WHERE run_id = ? AND call_id = ? AND status = 'pending' AND kind = 'delegation'`,
			m.To, m.Result, ms(now), ms(now), m.RunID, m.CallID)
		if err := one(res, err, store.ErrConflict); errors.Is(err, store.ErrConflict) {
			return conflict(ctx, tx, m.RunID, m.CallID)
		} else if err != nil {
			return err
		}
		tx.audit(outcomeRecord(m, now)) // a delegation's outcome
		if err := appendEvents(ctx, tx, now, ev); err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx, `UPDATE runs SET status = 'running', owner = ?, lease_expires = ?, updated_at = ?,
			error = CASE WHEN status = 'stalled' THEN '' ELSE error END
			WHERE id = ? AND status IN ('suspended', 'running', 'stalled') AND (owner IS NULL OR lease_expires < ?)`,
			lease.Owner, ms(now.Add(lease.TTL)), ms(now), m.RunID, ms(now))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		claimed = n == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("settle call %s of run %s: %w", m.CallID, m.RunID, err)
	}
	return claimed, nil
}

// Decisions implements store.Store.
func (s *DB) Decisions(ctx context.Context, runID string) ([]*store.Decision, error) {
	ds, err := queryDecisions(ctx, reader{s}, `WHERE run_id = ? ORDER BY id`, runID)
	if err != nil {
		return nil, fmt.Errorf("decisions of run %s: %w", runID, err)
	}
	return ds, nil
}

// queryDecisions reads the decisions that where (a WHERE clause, with
// its order) selects.
func queryDecisions(ctx context.Context, q querier, where string, args ...any) ([]*store.Decision, error) {
	rows, err := q.QueryContext(ctx, `SELECT run_id, call_id, action, by_name, os_user, via, reason, args_before, args_after, data, at
		FROM decisions `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.Decision
	for rows.Next() {
		var d store.Decision
		var before, after, data sql.NullString
		var at int64
		if err := rows.Scan(&d.RunID, &d.CallID, &d.Action, &d.By, &d.OSUser, &d.Via, &d.Reason, &before, &after, &data, &at); err != nil {
			return nil, err
		}
		d.ArgsBefore, d.ArgsAfter, d.Data = raw(before), raw(after), raw(data)
		d.At = fromMS(at)
		out = append(out, &d)
	}
	return out, rows.Err()
}

func raw(s sql.NullString) []byte {
	if !s.Valid {
		return nil
	}
	return []byte(s.String)
}

// Grants implements store.Store.
func (s *DB) Grants(ctx context.Context, runID string) ([]string, error) {
	rows, err := s.query(ctx, `SELECT DISTINCT c.tool FROM decisions d
		JOIN calls c ON c.run_id = d.run_id AND c.call_id = d.call_id
		WHERE d.run_id = ? AND d.action = 'grant' ORDER BY c.tool`, runID)
	if err != nil {
		return nil, fmt.Errorf("grants of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Expired implements store.Store.
func (s *DB) Expired(ctx context.Context, now time.Time) ([]string, error) {
	ids, err := s.runIDs(ctx, `SELECT DISTINCT run_id FROM calls
		WHERE status = 'pending' AND deadline IS NOT NULL AND deadline < ? ORDER BY run_id`, ms(now))
	if err != nil {
		return nil, fmt.Errorf("expired calls: %w", err)
	}
	return ids, nil
}

// Events implements store.Store.
func (s *DB) Events(ctx context.Context, runID string, after int64) ([]*store.Event, error) {
	rows, err := s.query(ctx, `SELECT id, run_id, type, data, at FROM event_rows
		WHERE run_id = ? AND id > ? ORDER BY id`, runID, after)
	if err != nil {
		return nil, fmt.Errorf("events of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []*store.Event
	for rows.Next() {
		var e store.Event
		var ty, data string
		var at int64
		if err := rows.Scan(&e.ID, &e.RunID, &ty, &data, &at); err != nil {
			return nil, err
		}
		e.Type, e.Data, e.At = decodeEventType(ty), json.RawMessage(data), fromMS(at)
		out = append(out, &e)
	}
	return out, rows.Err()
}

// appendEvents writes events in the caller's transaction, in one
// statement.
func appendEvents(ctx context.Context, tx *txn, now time.Time, evs []store.Event) error {
	if len(evs) == 0 {
		return nil
	}
	args := make([]any, 0, 4*len(evs))
	for i := range evs {
		if evs[i].At.IsZero() { // else when it happened, shown live already
			evs[i].At = now
		}
		evs[i].At = fromMS(ms(evs[i].At)) // as stored: the caller emits them so
	}
	for _, e := range evs {
		data := string(e.Data)
		if data == "" {
			data = "{}"
		}
		args = append(args, e.RunID, encodeEventType(e.Type), data, ms(e.At))
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO event_rows(run_id, type, data, at) VALUES (?, ?, ?, ?)`+
		strings.Repeat(", (?, ?, ?, ?)", len(evs)-1), args...)
	return err
}

// Decide implements store.Store.
func (s *DB) Decide(ctx context.Context, ds []*store.Decision, lease store.Lease, ev ...store.Event) (bool, error) {
	if len(ds) == 0 {
		return false, nil
	}
	now := s.now()
	runID := ds[0].RunID
	var claimed bool
	err := s.tx(ctx, func(tx *txn) error {
		if err := tx.lockRun(ctx, runID); err != nil {
			return err
		}
		moved := false
		for _, d := range ds {
			if d.RunID != runID {
				return fmt.Errorf("decisions for several runs in one batch")
			}
			if d.Escalation != nil {
				if ok, err := escalate(ctx, tx, d.Escalation, now); err != nil || !ok {
					return cmp.Or(err, error(&store.ConflictError{RunID: d.RunID, CallID: d.CallID}))
				}
			}
			m, err := decide(ctx, tx, d, now)
			if err != nil {
				return err
			}
			moved = moved || m
		}
		for _, d := range ds {
			if d.Request != nil {
				if err := recordRequest(ctx, tx, now, d.Request, runID); err != nil {
					return err
				}
				break
			}
		}
		if err := appendEvents(ctx, tx, now, ev); err != nil {
			return err
		}
		if !moved {
			return nil // only records: nothing for anyone to advance
		}
		if lease.Owner == "" { // detached: work for a worker
			_, err := tx.ExecContext(ctx, `UPDATE runs SET ready = 1, updated_at = ? WHERE id = ?`, ms(now), runID)
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'running', owner = ?, lease_expires = ?, updated_at = ?
			WHERE id = ? AND status IN ('suspended', 'running') AND (owner IS NULL OR lease_expires < ?)`,
			lease.Owner, ms(now.Add(lease.TTL)), ms(now), runID, ms(now))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if claimed = n == 1; err != nil || !claimed {
			return err
		}
		return started(ctx, tx, now, ds)
	})
	var ce *store.ConflictError
	if errors.As(err, &ce) || errors.Is(err, store.ErrRequestSeen) {
		return false, err
	}
	if err != nil {
		return false, fmt.Errorf("decide on run %s: %w", runID, err)
	}
	for _, d := range ds {
		d.At = fromMS(ms(now))
	}
	return claimed, nil
}

// started moves on to executing the calls decisions approved with Start,
// in a run the transaction has just claimed.
func started(ctx context.Context, tx *txn, now time.Time, ds []*store.Decision) error {
	for _, d := range ds {
		if !d.Start || d.Action != store.Approve {
			continue
		}
		_, err := tx.ExecContext(ctx, `UPDATE calls SET status = 'executing', started_at = ?, updated_at = ?
			WHERE run_id = ? AND call_id = ? AND status = 'approved'`, ms(now), ms(now), d.RunID, d.CallID)
		if err != nil {
			return err
		}
	}
	return nil
}

// decide applies one decision in the caller's transaction, and reports
// whether it moved the call (rather than only being recorded).
func decide(ctx context.Context, tx *txn, d *store.Decision, now time.Time) (bool, error) {
	var res sql.Result
	var err error
	moved := true
	switch d.Action {
	case store.Approve:
		if d.Needed > 1 {
			last, err := approval(ctx, tx, d, now)
			if err != nil {
				return false, err
			}
			if !last {
				moved = false
				break
			}
		}
		res, err = tx.ExecContext(ctx, `UPDATE calls SET status = 'approved', kind = '', deadline = NULL,
			args = COALESCE(?, args), approvals = approvals + 1, updated_at = ?
			WHERE run_id = ? AND call_id = ? AND status = 'pending' AND kind = 'approval'`,
			text(d.ArgsAfter), ms(now), d.RunID, d.CallID)
	case store.Resume:
		res, err = tx.ExecContext(ctx, `UPDATE calls SET status = 'approved', kind = '', deadline = NULL,
			resume = ?, updated_at = ?
			WHERE run_id = ? AND call_id = ? AND status = 'pending' AND kind = 'suspend'`,
			text(d.Data), ms(now), d.RunID, d.CallID)
	case store.Decline, store.Expire:
		res, err = tx.ExecContext(ctx, `UPDATE calls SET status = 'declined', kind = '', deadline = NULL,
			result = ?, updated_at = ?
			WHERE run_id = ? AND call_id = ? AND status = 'pending'`,
			d.Result, ms(now), d.RunID, d.CallID)
	case store.Grant:
		// Only the record: it goes with an approval in the same batch.
		moved = false
	case store.Refused:
		// Only the record of the attempt.
		moved = false
	case store.Retry:
		if d.Needed > 1 {
			last, err := retryVote(ctx, tx, d)
			if err != nil {
				return false, err
			}
			if !last {
				moved = false
				break
			}
		}
		res, err = tx.ExecContext(ctx, `UPDATE calls SET status = 'approved', kind = '', updated_at = ?
			WHERE run_id = ? AND call_id = ? AND status = 'interrupted'`, ms(now), d.RunID, d.CallID)
	case store.Resolve:
		res, err = tx.ExecContext(ctx, `UPDATE calls SET status = ?, result = ?, kind = '', updated_at = ?
			WHERE run_id = ? AND call_id = ? AND status = 'interrupted'`, d.Status, d.Result, ms(now), d.RunID, d.CallID)
	default:
		return false, fmt.Errorf("unknown decision %q", d.Action)
	}
	if res != nil || err != nil {
		if err := one(res, err, store.ErrConflict); errors.Is(err, store.ErrConflict) {
			return false, conflict(ctx, tx, d.RunID, d.CallID)
		} else if err != nil {
			return false, err
		}
	}
	var id int64
	err = tx.QueryRowContext(ctx, `INSERT INTO decisions(run_id, call_id, action, by_name, os_user, via, reason, args_before, args_after, data, at)
		VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`, d.RunID, d.CallID, d.Action, d.By, d.OSUser, d.Via, d.Reason,
		text(d.ArgsBefore), text(d.ArgsAfter), text(d.Data), ms(now)).Scan(&id)
	if err != nil {
		return false, err
	}
	tx.audit(decisionRecord(id, d, ms(now)))
	return moved, nil
}

// approval counts one of the several approvals a call needs: it refuses
// an approver who already approved, and reports whether this approval is
// the last one needed (the caller then moves the call). Otherwise it
// counts it and leaves the call pending.
func approval(ctx context.Context, tx *txn, d *store.Decision, now time.Time) (last bool, err error) {
	var status string
	var kind store.Kind
	var approvals int
	err = tx.QueryRowContext(ctx, `SELECT status, kind, approvals FROM calls WHERE run_id = ? AND call_id = ?`,
		d.RunID, d.CallID).Scan(&status, &kind, &approvals)
	if errors.Is(err, sql.ErrNoRows) || err == nil && (status != string(store.CallPending) || kind != store.KindApproval) {
		return false, conflict(ctx, tx, d.RunID, d.CallID)
	}
	if err != nil {
		return false, err
	}
	// A decision counts against the person it names and the principal
	// that made it: neither supplies two approvals of one call. An
	// approval of a preview since replaced (its data, the digest: a
	// drift cleared it) no longer counts.
	var by, principal string
	err = tx.QueryRowContext(ctx, `SELECT by_name, os_user FROM decisions WHERE run_id = ? AND call_id = ? AND action = 'approve'
		AND (by_name IN (?, ?) OR os_user IN (?, ?)) AND COALESCE(data, '') = ? LIMIT 1`,
		d.RunID, d.CallID, d.By, d.OSUser, d.By, d.OSUser, string(d.Data)).Scan(&by, &principal)
	if err == nil {
		who := by
		if principal != by {
			who = fmt.Sprintf("%s (as %s)", principal, by)
		}
		return false, &store.ForbiddenError{RunID: d.RunID, CallID: d.CallID,
			Reason: fmt.Sprintf("%s has already approved it; it needs %d approvals from different people, each deciding once (%d of %d so far)", who, d.Needed, approvals, d.Needed)}
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	if approvals+1 >= d.Needed {
		return true, nil
	}
	_, err = tx.ExecContext(ctx, `UPDATE calls SET approvals = approvals + 1, updated_at = ? WHERE run_id = ? AND call_id = ?`,
		ms(now), d.RunID, d.CallID)
	return false, err
}

// retryVote counts one of the retries a call that needed several
// approvals needs before it runs again: as many people as approved it.
// It refuses one who already asked for a retry since the call was last
// interrupted (its updated_at, which a vote leaves as it is), and reports
// whether this retry is the last one needed.
func retryVote(ctx context.Context, tx *txn, d *store.Decision) (last bool, err error) {
	var status string
	var since int64
	err = tx.QueryRowContext(ctx, `SELECT status, updated_at FROM calls WHERE run_id = ? AND call_id = ?`,
		d.RunID, d.CallID).Scan(&status, &since)
	if errors.Is(err, sql.ErrNoRows) || err == nil && status != string(store.CallInterrupted) {
		return false, conflict(ctx, tx, d.RunID, d.CallID)
	}
	if err != nil {
		return false, err
	}
	var votes, mine int
	err = tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(CASE WHEN by_name IN (?, ?) OR os_user IN (?, ?) THEN 1 ELSE 0 END), 0)
		FROM decisions WHERE run_id = ? AND call_id = ? AND action = 'retry' AND at >= ?`,
		d.By, d.OSUser, d.By, d.OSUser, d.RunID, d.CallID, since).Scan(&votes, &mine)
	if err != nil {
		return false, err
	}
	if mine > 0 {
		return false, &store.ForbiddenError{RunID: d.RunID, CallID: d.CallID,
			Reason: fmt.Sprintf("%s has already asked to retry it; as it needed %d approvals, it needs %d retries from different people, each deciding once (%d of %d so far)",
				d.By, d.Needed, d.Needed, votes, d.Needed)}
	}
	return votes+1 >= d.Needed, nil
}

// conflict builds the error for a transition that found the call in
// another state: it says what state, and who decided it.
func conflict(ctx context.Context, tx *txn, runID, callID string) error {
	e := &store.ConflictError{RunID: runID, CallID: callID}
	err := tx.QueryRowContext(ctx, `SELECT status, kind FROM calls WHERE run_id = ? AND call_id = ?`, runID, callID).Scan(&e.Status, &e.Kind)
	if errors.Is(err, sql.ErrNoRows) {
		return e
	}
	if err != nil {
		return err
	}
	var at int64
	err = tx.QueryRowContext(ctx, `SELECT action, by_name, at FROM decisions
		WHERE run_id = ? AND call_id = ? AND action != 'grant' ORDER BY id DESC LIMIT 1`,
		runID, callID).Scan(&e.Action, &e.By, &at)
	if err == nil {
		e.At = fromMS(at)
	} else if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return e
}

// Audit implements store.AuditStore: the decisions table's, then the
// tombstones' of pruned runs, merged in time order.
func (s *DB) Audit(ctx context.Context, f store.AuditFilter) ([]*store.Audited, error) {
	live, kept, err := auditCursor(f.After)
	if err != nil {
		return nil, err
	}
	q := `SELECT d.id, d.run_id, d.call_id, d.action, d.by_name, d.os_user, d.via, d.reason, d.args_before, d.args_after, d.data, d.at,
		r.agent, COALESCE(r.root_id, r.id), COALESCE(c.tool, ''), r.path
		FROM decisions d JOIN runs r ON r.id = d.run_id
		LEFT JOIN calls c ON c.run_id = d.run_id AND c.call_id = d.call_id WHERE d.id > ?`
	args := []any{live}
	if !f.Since.IsZero() {
		q, args = q+` AND d.at >= ?`, append(args, ms(f.Since))
	}
	if !f.Until.IsZero() {
		q, args = q+` AND d.at < ?`, append(args, ms(f.Until))
	}
	if f.Agent != "" && f.RootOnly {
		q, args = q+` AND r.agent = ?`, append(args, f.Agent)
	} else if f.Agent != "" {
		// A run below one of the agent's has it in its path (a JSON
		// array of names: the quotes keep "db" from matching "dbops").
		q, args = q+` AND (r.agent = ? OR r.path LIKE ? ESCAPE '!')`, append(args, f.Agent, pathHas(f.Agent))
	}
	q += ` ORDER BY d.id`
	if f.Limit > 0 {
		q, args = q+` LIMIT ?`, append(args, f.Limit)
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("audit trail: %w", s.Classify(err))
	}
	defer rows.Close()
	var out []*store.Audited
	var ids []int64
	for rows.Next() {
		var a store.Audited
		var before, after, data sql.NullString
		var at, id int64
		var path string
		if err := rows.Scan(&id, &a.RunID, &a.CallID, &a.Action, &a.By, &a.OSUser, &a.Via, &a.Reason, &before, &after, &data, &at,
			&a.Agent, &a.RootID, &a.Tool, &path); err != nil {
			return nil, fmt.Errorf("audit trail: %w", err)
		}
		if a.Path = []string{a.Agent}; path != "" && path != "[]" {
			if err := json.Unmarshal([]byte(path), &a.Path); err != nil {
				return nil, fmt.Errorf("audit trail: run %s: path: %w", a.RunID, err)
			}
		}
		a.ArgsBefore, a.ArgsAfter, a.Data = raw(before), raw(after), raw(data)
		a.At = fromMS(at)
		out, ids = append(out, &a), append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit trail: %w", s.Classify(err))
	}
	// The decisions of pruned runs, kept by their tombstones (prune
	// --keep-audit), in time order with the others.
	pruned, err := s.auditTombstones(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("audit trail: pruned runs: %w", s.Classify(err))
	}
	pruned = pruned[min(kept, len(pruned)):]
	return mergeAudit(auditLive{out, ids, live}, auditKept{pruned, kept}, f.Limit), nil
}

// pathHas is the LIKE pattern (escape character !) that finds name
// among the elements of a run's path as the store writes it (JSON).
func pathHas(name string) string {
	b, _ := json.Marshal(name)
	return "%" + strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(string(b)) + "%"
}
