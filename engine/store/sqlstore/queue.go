package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// work is what ClaimStart looks for; its one parameter is now.
const work = `((status = 'queued' AND owner IS NULL)
	OR (status = 'running' AND (owner IS NULL OR lease_expires < ?))
	OR (status = 'suspended' AND ready = 1 AND owner IS NULL))`

// agedOut is true of a worker row that aged out (store.WorkerAgeOut);
// its one parameter is now.
var agedOut = fmt.Sprintf(`seen_at < CAST(? AS BIGINT) - %d * lease_ms`, store.WorkerAgeOut)

// claim is the UPDATE that claims one run of work for lease (agent, when
// set, limiting it to trees whose root runs that agent), without its
// RETURNING, and its arguments.
func (s *DB) claim(now time.Time, lease store.Lease, agent string) (string, []any) {
	pick := `SELECT id FROM runs WHERE ` + work
	args := []any{lease.Owner, ms(now.Add(lease.TTL)), ms(now), ms(now)}
	if agent != "" {
		pick += ` AND COALESCE(root_id, id) IN (SELECT id FROM runs WHERE agent = ? AND parent_id IS NULL)`
		args = append(args, agent)
	}
	pick += ` ORDER BY updated_at, id LIMIT 1`
	if s.d.SkipLocked {
		pick += ` FOR UPDATE SKIP LOCKED`
	}
	return `UPDATE runs SET status = 'running', owner = ?, lease_expires = ?, ready = 0, updated_at = ?
		WHERE id = (` + pick + `)`, args
}

// Beat implements store.Store.
func (s *DB) Beat(ctx context.Context, w store.Worker) error {
	now := s.now()
	err := s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO workers(id, host, pid, agent, concurrency, lease_ms, started_at, seen_at, done, problems)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at, done = excluded.done, problems = excluded.problems`,
			w.ID, w.Host, w.PID, w.Agent, w.Concurrency, w.Lease.Milliseconds(), ms(w.Started), ms(now), w.Done, w.Problems)
		if err != nil {
			return err
		}
		// Workers that stopped beating long ago (killed) are deleted here,
		// on a worker's write path: reads only leave them out.
		_, err = tx.ExecContext(ctx, `DELETE FROM workers WHERE `+agedOut, ms(now))
		return err
	})
	if err != nil {
		return fmt.Errorf("worker heartbeat: %w", err)
	}
	return nil
}

// Gone implements store.Store.
func (s *DB) Gone(ctx context.Context, workerID string) error {
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM workers WHERE id = ?`, workerID)
		return err
	})
}

// Queue implements store.Store.
func (s *DB) Queue(ctx context.Context) (*store.QueueStatus, error) {
	now := ms(s.now())
	q := &store.QueueStatus{}
	rows, err := s.query(ctx, `SELECT id, host, pid, agent, concurrency, lease_ms, started_at, seen_at, done, problems FROM workers
		WHERE NOT (`+agedOut+`) ORDER BY started_at, id`, now)
	if err != nil {
		return nil, fmt.Errorf("workers: %w", err)
	}
	for rows.Next() {
		var w store.Worker
		var lease, started, seen int64
		if err := rows.Scan(&w.ID, &w.Host, &w.PID, &w.Agent, &w.Concurrency, &lease, &started, &seen, &w.Done, &w.Problems); err != nil {
			rows.Close()
			return nil, err
		}
		w.Lease, w.Started, w.Seen = time.Duration(lease)*time.Millisecond, fromMS(started), fromMS(seen)
		q.Workers = append(q.Workers, w)
	}
	rows.Close()
	if err := s.queryRow(ctx, `SELECT count(*) FROM runs WHERE owner IS NOT NULL AND lease_expires >= ?`, now).Scan(&q.Leases); err != nil {
		return nil, err
	}
	if err := s.queryRow(ctx, `SELECT count(*) FROM runs WHERE `+work, now).Scan(&q.Queued); err != nil {
		return nil, err
	}
	var oldest sql.NullInt64
	if err := s.queryRow(ctx, `SELECT count(*), min(created_at),
		count(CASE WHEN status = 'pending' AND deadline IS NOT NULL AND deadline < ? THEN 1 END)
		FROM calls WHERE status IN ('pending', 'interrupted') AND kind != 'delegation'`, now).Scan(&q.Pending, &oldest, &q.Overdue); err != nil {
		return nil, err
	}
	if oldest.Valid {
		q.OldestPending = fromMS(oldest.Int64)
	}
	return q, nil
}
