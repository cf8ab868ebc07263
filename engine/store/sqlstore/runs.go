package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/engine/store"
)

const runCols = `id, agent, status, input, output, error, spec_hash, step, state, created_at, updated_at, parent_id, parent_call, root_id, path, model_calls, tokens_in, tokens_out, started_by`

// selectRun reads a run with its lease.
const selectRun = `SELECT ` + runCols + `, COALESCE(owner, ''), COALESCE(lease_expires, 0) FROM runs`

type scanner interface{ Scan(...any) error }

func scanRun(sc scanner, extra ...any) (*store.Run, error) {
	var r store.Run
	var created, updated int64
	var parent, root sql.NullString
	var path string
	err := sc.Scan(append([]any{&r.ID, &r.Agent, &r.Status, &r.Input, &r.Output, &r.Error, &r.SpecHash, &r.Step, &r.State, &created, &updated,
		&parent, &r.ParentCall, &root, &path, &r.Usage.ModelCalls, &r.Usage.InputTokens, &r.Usage.OutputTokens, &r.StartedBy}, extra...)...)
	if err != nil {
		return nil, err
	}
	// A root run stores neither its root (itself) nor its path (its
	// agent): a suspended run's bytes are mostly per-run overhead.
	r.ParentID, r.RootID = parent.String, root.String
	if r.RootID == "" {
		r.RootID = r.ID
	}
	if path == "" || path == "[]" {
		r.Path = []string{r.Agent}
	} else if err := json.Unmarshal([]byte(path), &r.Path); err != nil {
		return nil, fmt.Errorf("run %s: path: %w", r.ID, err)
	}
	r.CreatedAt, r.UpdatedAt = fromMS(created), fromMS(updated)
	return &r, nil
}

// Run implements store.Store.
func (s *DB) Run(ctx context.Context, id string) (*store.Run, error) {
	var owner string
	var expires int64
	r, err := scanRun(s.queryRow(ctx, selectRun+` WHERE id = ?`, id), &owner, &expires)
	if err == nil {
		r.Owner = owner
		if expires > 0 {
			r.Expires = fromMS(expires)
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &store.NotFoundError{What: "no run " + id}
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	return r, nil
}

// ResolveID implements store.Store.
func (s *DB) ResolveID(ctx context.Context, prefix string) (string, error) {
	rows, err := s.query(ctx, `SELECT id FROM runs WHERE id >= ? AND id < ? ORDER BY id LIMIT 5`,
		prefix, prefix+"\U0010FFFF")
	if err != nil {
		return "", fmt.Errorf("resolve run id %q: %w", prefix, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return "", err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	switch len(ids) {
	case 0:
		return "", &store.NotFoundError{What: fmt.Sprintf("no run id starts with %q", prefix)}
	case 1:
		return ids[0], nil
	}
	return "", &store.AmbiguousError{Prefix: prefix, Matches: ids}
}

// List implements store.Store. A cursor (f.Before) must name a run the
// store has: any other is store.ErrBadCursor.
func (s *DB) List(ctx context.Context, f store.Filter) ([]*store.Run, error) {
	var where []string
	var args []any
	if f.Before != "" {
		var n int
		if err := s.queryRow(ctx, `SELECT count(*) FROM runs WHERE id = ?`, f.Before).Scan(&n); err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		if n == 0 {
			return nil, fmt.Errorf("list runs: cursor %q: %w", f.Before, store.ErrBadCursor)
		}
		where, args = append(where, "id < ?"), append(args, f.Before)
	}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, f.Status)
	}
	if f.Agent != "" {
		where, args = append(where, "agent = ?"), append(args, f.Agent)
	}
	if f.Roots {
		where = append(where, "parent_id IS NULL")
	}
	q := `SELECT ` + runCols + ` FROM runs`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []*store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Tree implements store.Store.
func (s *DB) Tree(ctx context.Context, rootID string) ([]*store.Run, error) {
	rows, err := s.query(ctx, `SELECT `+runCols+` FROM runs WHERE id = ? OR root_id = ? ORDER BY parent_id IS NULL DESC, id`, rootID, rootID)
	if err != nil {
		return nil, fmt.Errorf("tree of run %s: %w", rootID, err)
	}
	defer rows.Close()
	var out []*store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Spec implements store.Store.
func (s *DB) Spec(ctx context.Context, hash string) ([]byte, error) {
	var body []byte
	err := s.queryRow(ctx, `SELECT body FROM specs WHERE hash = ?`, hash).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &store.NotFoundError{What: "no spec snapshot " + hash}
	}
	return body, err
}

// Claim implements store.Store.
func (s *DB) Claim(ctx context.Context, lease store.Lease, runID string, from ...store.Status) error {
	now := s.now()
	err := s.tx(ctx, func(tx *txn) error {
		if err := tx.lockRun(ctx, runID); err != nil {
			return err
		}
		var status store.Status
		var owner sql.NullString
		var expires sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT status, owner, lease_expires FROM runs WHERE id = ?`, runID).Scan(&status, &owner, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return &store.NotFoundError{What: "no run " + runID}
		}
		if err != nil {
			return err
		}
		held := owner.Valid && owner.String != lease.Owner && expires.Int64 >= ms(now)
		if held || !slices.Contains(from, status) {
			return &store.StateError{RunID: runID, Status: status, Want: from}
		}
		_, err = tx.ExecContext(ctx, `UPDATE runs SET status = 'running', owner = ?, lease_expires = ?, ready = 0, updated_at = ?,
			error = CASE WHEN status = 'stalled' THEN '' ELSE error END WHERE id = ?`,
			lease.Owner, ms(now.Add(lease.TTL)), ms(now), runID)
		return err
	})
	if err != nil {
		return fmt.Errorf("claim run %s: %w", runID, err)
	}
	return nil
}

// Release implements store.Store.
func (s *DB) Release(ctx context.Context, lease store.Lease, runID string) error {
	_, err := s.exec(ctx, `UPDATE runs SET owner = NULL, lease_expires = NULL WHERE id = ? AND owner = ?`, runID, lease.Owner)
	if err != nil {
		return fmt.Errorf("release run %s: %w", runID, err)
	}
	return nil
}

// Takeover implements store.Store.
func (s *DB) Takeover(ctx context.Context, lease store.Lease, runID, owner string) error {
	now := s.now()
	err := s.tx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE runs SET owner = ?, lease_expires = ?, status = 'running', updated_at = ?
			WHERE id = ? AND owner = ?`, lease.Owner, ms(now.Add(lease.TTL)), ms(now), runID, owner)
		return one(res, err, store.ErrLeaseLost)
	})
	if err != nil {
		return fmt.Errorf("take over run %s: %w", runID, err)
	}
	return nil
}

// Holders implements store.Store.
func (s *DB) Holders(ctx context.Context) ([]string, error) {
	var owners []string
	err := s.strings(ctx, &owners, s.rebind(`SELECT DISTINCT owner FROM runs
		WHERE status = 'running' AND owner IS NOT NULL AND lease_expires >= ?`), ms(s.now()))
	if err != nil {
		return nil, fmt.Errorf("lease holders: %w", s.Classify(err))
	}
	return owners, nil
}

// Lapse implements store.Store. The lease ends a millisecond ago: Claim
// and ClaimStart take a lease that ended before now.
func (s *DB) Lapse(ctx context.Context, owner string) (int, error) {
	now := ms(s.now())
	res, err := s.exec(ctx, `UPDATE runs SET lease_expires = ?
		WHERE owner = ? AND status = 'running' AND lease_expires >= ?`, now-1, owner, now)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil {
		return 0, fmt.Errorf("end the leases of %s: %w", owner, s.Classify(err))
	}
	return int(n), nil
}

// Renew implements store.Store.
func (s *DB) Renew(ctx context.Context, lease store.Lease, runID string) error {
	now := s.now()
	err := s.tx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE runs SET lease_expires = ? WHERE id = ? AND owner = ?`,
			ms(now.Add(lease.TTL)), runID, lease.Owner)
		return one(res, err, store.ErrLeaseLost)
	})
	if err != nil {
		return fmt.Errorf("renew lease on run %s: %w", runID, err)
	}
	return nil
}

// one checks that an update touched exactly one row, else returns miss.
func one(res sql.Result, err error, miss error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != 1 {
		return miss
	}
	return nil
}
