package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// ClaimStart implements store.Store: one statement where the dialect
// writes in WITH (PostgreSQL), else one transaction.
func (s *DB) ClaimStart(ctx context.Context, lease store.Lease, agent string, plain []store.Plain) (*store.Claimed, error) {
	now := s.now()
	var w *store.Claimed
	var err error
	if s.d.WriteCTE {
		w, err = s.claimStartOne(ctx, now, lease, agent, plain)
	} else {
		err = s.tx(ctx, func(tx *txn) error {
			w, err = s.claimStartIn(ctx, tx, now, lease, agent, plain)
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("claim work: %w", s.Classify(err))
	}
	if w == nil {
		return nil, nil
	}
	w.Run.Owner, w.Run.Expires = lease.Owner, fromMS(ms(now.Add(lease.TTL)))
	for _, c := range w.Calls {
		if c.ID == w.Started {
			c.Status, c.StartedAt, c.UpdatedAt = store.CallExecuting, fromMS(ms(now)), fromMS(ms(now))
		}
	}
	return w, nil
}

// startSQL moves a claimed run's call on to executing: the same columns
// as a move to executing (moveSQL) sets.
const startSQL = `UPDATE calls SET status = 'executing', started_at = ?, updated_at = ?
	WHERE run_id = ? AND call_id = ? AND status = 'approved'`

// claimStartIn claims, reads the calls and starts in the caller's
// transaction; the choice of the call is made here (store.Startable).
func (s *DB) claimStartIn(ctx context.Context, tx *txn, now time.Time, lease store.Lease, agent string, plain []store.Plain) (*store.Claimed, error) {
	q, args := s.claim(now, lease, agent)
	r, err := scanRun(tx.QueryRowContext(ctx, q+` RETURNING `+runCols, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	calls, err := queryCalls(ctx, tx, `SELECT `+callCols+` FROM calls WHERE run_id = ? ORDER BY seq`, r.ID)
	if err != nil {
		return nil, err
	}
	w := &store.Claimed{Run: r, Calls: calls}
	if c := store.Startable(r, calls, plain); c != nil {
		res, err := tx.ExecContext(ctx, startSQL, ms(now), ms(now), r.ID, c.ID)
		if err := one(res, err, store.ErrConflict); err != nil {
			return nil, err
		}
		w.Started = c.ID
	}
	return w, nil
}

// startWhere is store.Startable's test in SQL, on the approved call c
// with the lowest sequence number in the latest step of claimed run r:
// its approval on record (none needed: a gate whose verdict is not
// required, as store.EncodeGate or an older agentctl's text writes it),
// its declaration among the plain ones given as three arrays.
const startWhere = `(c.approvals > 0 OR NOT (c.gate LIKE '{"verdict":"required"%' OR c.gate LIKE 'required by %'))
		AND (r.spec_hash, r.agent, split_part(c.tool, '.', 1)) IN
			(SELECT * FROM unnest(CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[])))`

// claimStartOne is ClaimStart in one PostgreSQL statement. Its parts see
// one snapshot: the calls it returns are as they were before the start,
// which ClaimStart sets on the call started. A call moved meanwhile by
// another process (an expired lease's holder still at work) is found
// so when the start locks it, and is not started.
func (s *DB) claimStartOne(ctx context.Context, now time.Time, lease store.Lease, agent string, plain []store.Plain) (*store.Claimed, error) {
	claim, args := s.claim(now, lease, agent)
	hashes, agents, decls := make([]string, len(plain)), make([]string, len(plain)), make([]string, len(plain))
	for i, p := range plain {
		hashes[i], agents[i], decls[i] = p.SpecHash, p.Agent, p.Decl
	}
	args = append(args, ms(now), ms(now), hashes, agents, decls)
	q := `WITH claimed AS (` + claim + ` RETURNING ` + runCols + `),
	first AS (
		SELECT c.call_id FROM calls c, claimed r
		WHERE c.run_id = r.id AND c.step = r.step AND c.status = 'approved'
		ORDER BY c.seq LIMIT 1
	),
	started AS (
		UPDATE calls c SET status = 'executing', started_at = ?, updated_at = ?
		FROM claimed r, first f
		WHERE c.run_id = r.id AND c.call_id = f.call_id AND c.status = 'approved' AND ` + startWhere + `
		RETURNING c.call_id
	)
	SELECT ` + runCols + `, COALESCE((SELECT call_id FROM started), ''),
		COALESCE((SELECT json_agg(json_build_array(` + qualified("c.", callCols) + `) ORDER BY c.seq)
			FROM calls c WHERE c.run_id = r.id), '[]')
	FROM claimed r`
	var started string
	var calls []byte
	r, err := scanRun(s.queryRow(ctx, q, args...), &started, &calls)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rows []jsonRow
	if err := json.Unmarshal(calls, &rows); err != nil {
		return nil, fmt.Errorf("calls of run %s: %w", r.ID, err)
	}
	w := &store.Claimed{Run: r, Started: started, Calls: make([]*store.Call, len(rows))}
	for i, row := range rows {
		if w.Calls[i], err = scanCall(row); err != nil {
			return nil, fmt.Errorf("calls of run %s: %w", r.ID, err)
		}
	}
	return w, nil
}

// qualified prefixes each of a list of columns.
func qualified(prefix, cols string) string {
	return prefix + strings.ReplaceAll(cols, ", ", ", "+prefix)
}

// jsonRow is a row as json_build_array writes it, scanned as database/sql
// scans a row of the same columns. Its strings are unescaped
// (UnescapeText), as PostgreSQL's connections unescape a row's.
type jsonRow []json.RawMessage

// Scan implements scanner.
func (r jsonRow) Scan(dest ...any) error {
	if len(dest) != len(r) {
		return fmt.Errorf("%d values for %d columns", len(r), len(dest))
	}
	for i, d := range dest {
		v, null := r[i], string(r[i]) == "null"
		var err error
		switch d := d.(type) {
		case *sql.NullString:
			*d = sql.NullString{Valid: !null}
			if !null {
				err = json.Unmarshal(v, &d.String)
				d.String = UnescapeText(d.String)
			}
		case *sql.NullInt64:
			*d = sql.NullInt64{Valid: !null}
			if !null {
				err = json.Unmarshal(v, &d.Int64)
			}
		case *bool: // an INTEGER column, 0 or 1
			var n int64
			err = json.Unmarshal(v, &n)
			*d = n != 0
		case *string:
			if null {
				err = errors.New("null")
			} else if err = json.Unmarshal(v, d); err == nil {
				*d = UnescapeText(*d)
			}
		default:
			if null {
				err = errors.New("null")
			} else {
				err = json.Unmarshal(v, d)
			}
		}
		if err != nil {
			return fmt.Errorf("column %d: %w", i+1, err)
		}
	}
	return nil
}
