package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/engine/store"
)

const callCols = `run_id, call_id, seq, step, tool, args, status, kind, result, created_at, updated_at`

func scanCall(sc scanner) (*store.Call, error) {
	var c store.Call
	var args string
	var created, updated int64
	if err := sc.Scan(&c.RunID, &c.ID, &c.Seq, &c.Step, &c.Tool, &args, &c.Status, &c.Kind, &c.Result, &created, &updated); err != nil {
		return nil, err
	}
	c.Args = []byte(args)
	c.CreatedAt, c.UpdatedAt = fromMS(created), fromMS(updated)
	return &c, nil
}

func queryCalls(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) ([]*store.Call, error) {
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
	cs, err := queryCalls(ctx, s.db, `SELECT `+callCols+` FROM calls WHERE run_id = ? ORDER BY seq`, runID)
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
		cs, err := queryCalls(ctx, s.db, `SELECT `+callCols+` FROM calls WHERE status = 'pending' AND run_id IN (?`+
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

// Decisions implements store.Store.
func (s *DB) Decisions(ctx context.Context, runID string) ([]*store.Decision, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT run_id, call_id, action, by_name, os_user, reason, at
		FROM decisions WHERE run_id = ? ORDER BY id`, runID)
	if err != nil {
		return nil, fmt.Errorf("decisions of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []*store.Decision
	for rows.Next() {
		var d store.Decision
		var at int64
		if err := rows.Scan(&d.RunID, &d.CallID, &d.Action, &d.By, &d.OSUser, &d.Reason, &at); err != nil {
			return nil, err
		}
		d.At = fromMS(at)
		out = append(out, &d)
	}
	return out, rows.Err()
}

// StartCall implements store.Store.
func (s *DB) StartCall(ctx context.Context, lease store.Lease, runID, callID string) error {
	return s.moveCall(ctx, lease, runID, callID, store.CallApproved, store.CallExecuting, "")
}

// FinishCall implements store.Store.
func (s *DB) FinishCall(ctx context.Context, lease store.Lease, runID, callID string, status store.CallStatus, result string) error {
	return s.moveCall(ctx, lease, runID, callID, store.CallExecuting, status, result)
}

// moveCall moves a call of a run that lease holds from one status to
// another, in one conditional update.
func (s *DB) moveCall(ctx context.Context, lease store.Lease, runID, callID string, from, to store.CallStatus, result string) error {
	now := s.now()
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE calls SET status = ?, result = ?, updated_at = ?
			WHERE run_id = ? AND call_id = ? AND status = ?
			AND EXISTS (SELECT 1 FROM runs WHERE id = ? AND owner = ?)`,
			to, result, ms(now), runID, callID, from, runID, lease.Owner)
		if err := one(res, err, store.ErrConflict); !errors.Is(err, store.ErrConflict) {
			return err
		}
		if err := holds(ctx, tx, lease, runID); err != nil {
			return err
		}
		return conflict(ctx, tx, runID, callID)
	})
	if err != nil {
		return fmt.Errorf("%s call %s: %w", to, callID, err)
	}
	return nil
}

// Decide implements store.Store.
func (s *DB) Decide(ctx context.Context, d *store.Decision, lease store.Lease) (bool, error) {
	now := s.now()
	status := store.CallApproved
	if d.Action == store.Decline {
		status = store.CallDeclined
	}
	var claimed bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE calls SET status = ?, result = ?, kind = '', updated_at = ?
			WHERE run_id = ? AND call_id = ? AND status = 'pending'`, status, d.Result, ms(now), d.RunID, d.CallID)
		if err := one(res, err, store.ErrConflict); errors.Is(err, store.ErrConflict) {
			return conflict(ctx, tx, d.RunID, d.CallID)
		} else if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO decisions(run_id, call_id, action, by_name, os_user, reason, at)
			VALUES(?, ?, ?, ?, ?, ?, ?)`, d.RunID, d.CallID, d.Action, d.By, d.OSUser, d.Reason, ms(now)); err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx, `UPDATE runs SET status = 'running', owner = ?, lease_expires = ?, updated_at = ?
			WHERE id = ? AND status IN ('suspended', 'running') AND (owner IS NULL OR lease_expires < ?)`,
			lease.Owner, ms(now.Add(lease.TTL)), ms(now), d.RunID, ms(now))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		claimed = n == 1
		return err
	})
	var ce *store.ConflictError
	if errors.As(err, &ce) {
		return false, err
	}
	if err != nil {
		return false, fmt.Errorf("%s call %s of run %s: %w", d.Action, d.CallID, d.RunID, err)
	}
	d.At = fromMS(ms(now))
	return claimed, nil
}

// holds checks that lease holds the run.
func holds(ctx context.Context, tx *sql.Tx, lease store.Lease, runID string) error {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE id = ? AND owner = ?`, runID, lease.Owner).Scan(&n)
	if err == nil && n != 1 {
		err = store.ErrLeaseLost
	}
	return err
}

// conflict builds the error for a transition that found the call in
// another state: it says what state, and who decided it.
func conflict(ctx context.Context, tx *sql.Tx, runID, callID string) error {
	e := &store.ConflictError{RunID: runID, CallID: callID}
	err := tx.QueryRowContext(ctx, `SELECT status FROM calls WHERE run_id = ? AND call_id = ?`, runID, callID).Scan(&e.Status)
	if errors.Is(err, sql.ErrNoRows) {
		return e
	}
	if err != nil {
		return err
	}
	var at int64
	err = tx.QueryRowContext(ctx, `SELECT action, by_name, at FROM decisions WHERE run_id = ? AND call_id = ? ORDER BY id DESC LIMIT 1`,
		runID, callID).Scan(&e.Action, &e.By, &at)
	if err == nil {
		e.At = fromMS(at)
	} else if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return e
}
