package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// NotifyMigration is the outbox's schema, and the inbox's sessions', on
// both backends, given how
// the backend writes an id column (its prefixes are looked up by range)
// and the cursor of the end of the feed (FeedEnd's query), where
// SourceSpec starts: a database upgraded with history does not notify
// what happened before.
func NotifyMigration(idType, feedEnd string) string {
	return strings.NewReplacer("ID_TYPE", idType, "FEED_END", feedEnd).Replace(notifyMigration)
}

const notifyMigration = `CREATE TABLE notifications (
		id            ID_TYPE PRIMARY KEY,
		source        TEXT NOT NULL,
		type          TEXT NOT NULL,
		run_id        TEXT NOT NULL,
		call_id       TEXT NOT NULL DEFAULT '',
		target        TEXT NOT NULL,
		message       TEXT NOT NULL,
		status        TEXT NOT NULL DEFAULT 'pending',
		attempts      INTEGER NOT NULL DEFAULT 0,
		next_at       BIGINT NOT NULL,
		claimed_by    TEXT NOT NULL DEFAULT '',
		claim_expires BIGINT NOT NULL DEFAULT 0,
		last_error    TEXT NOT NULL DEFAULT '',
		created_at    BIGINT NOT NULL,
		updated_at    BIGINT NOT NULL,
		delivered_at  BIGINT
	);
	CREATE INDEX notifications_due ON notifications(next_at) WHERE status = 'pending';
	CREATE INDEX notifications_run ON notifications(run_id, created_at);
	CREATE TABLE notify_cursors (
		source      TEXT PRIMARY KEY,
		feed_cursor TEXT NOT NULL
	);
	INSERT INTO notify_cursors(source, feed_cursor) VALUES ('spec', (FEED_END));
	CREATE TABLE sessions (
		hash        ID_TYPE PRIMARY KEY,
		token_hash  TEXT NOT NULL,
		user_name   TEXT NOT NULL,
		user_groups TEXT NOT NULL DEFAULT '[]',
		created_at  BIGINT NOT NULL,
		expires_at  BIGINT NOT NULL
	);`

// Queries of the end of the feed, also the migration's, of the events
// in the table EVENTS.
const (
	feedEndSQLite   = `SELECT COALESCE(CAST(MAX(id) AS TEXT), '') FROM EVENTS`
	feedEndPostgres = `SELECT COALESCE((SELECT xid::text || '-' || id FROM EVENTS WHERE xid < pg_snapshot_xmin(pg_current_snapshot())
		ORDER BY xid DESC, id DESC LIMIT 1), '')`
)

// FeedEndQuery is the query of the end of the feed of a backend (XID:
// PostgreSQL's), of the events in table: events up to schema 12
// (SQLite) or 9 (PostgreSQL), which the notifications' migration reads,
// event_rows from then on.
func FeedEndQuery(xid bool, table string) string {
	q := feedEndSQLite
	if xid {
		q = feedEndPostgres
	}
	return strings.Replace(q, "EVENTS", table, 1)
}

const notificationCols = `id, source, type, run_id, call_id, target, message, status, attempts, next_at, last_error, created_at, updated_at, delivered_at`

func scanNotification(sc scanner) (*store.Notification, error) {
	var n store.Notification
	var target, message string
	var next, created, updated int64
	var delivered sql.NullInt64
	if err := sc.Scan(&n.ID, &n.Source, &n.Type, &n.RunID, &n.CallID, &target, &message, &n.Status, &n.Attempts,
		&next, &n.LastError, &created, &updated, &delivered); err != nil {
		return nil, err
	}
	n.Target, n.Message = []byte(target), []byte(message)
	n.NextAt, n.CreatedAt, n.UpdatedAt = fromMS(next), fromMS(created), fromMS(updated)
	if delivered.Valid {
		n.DeliveredAt = fromMS(delivered.Int64)
	}
	return &n, nil
}

// NotifyCursor implements store.NotifyStore.
func (s *DB) NotifyCursor(ctx context.Context, source string) (string, bool, error) {
	var c string
	err := s.queryRow(ctx, `SELECT feed_cursor FROM notify_cursors WHERE source = ?`, source).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("notification cursor: %w", s.Classify(err))
	}
	return c, true, nil
}

// FeedEnd implements store.NotifyStore: the last event's cursor, on
// PostgreSQL among those of transactions below the snapshot's xmin (as
// Feed returns them).
func (s *DB) FeedEnd(ctx context.Context) (string, error) {
	var c string
	if err := s.queryRow(ctx, FeedEndQuery(s.d.XID, "event_rows")).Scan(&c); err != nil {
		return "", fmt.Errorf("end of the event feed: %w", s.Classify(err))
	}
	return c, nil
}

// Enqueue implements store.NotifyStore.
func (s *DB) Enqueue(ctx context.Context, source, from, to string, ns []*store.Notification) error {
	now := s.now()
	err := s.tx(ctx, func(tx *txn) error {
		for _, n := range ns {
			if n.Status == "" {
				n.Status = store.NotifyPending
			}
			if n.CreatedAt.IsZero() {
				n.CreatedAt = now
			}
			if n.NextAt.IsZero() {
				n.NextAt = n.CreatedAt
			}
			n.UpdatedAt = n.CreatedAt
			if _, err := tx.ExecContext(ctx, `INSERT INTO notifications(`+notificationCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (id) DO NOTHING`, n.ID, n.Source, n.Type, n.RunID, n.CallID, string(n.Target), string(n.Message),
				string(n.Status), n.Attempts, ms(n.NextAt), n.LastError, ms(n.CreatedAt), ms(n.UpdatedAt), msOrNil(n.DeliveredAt)); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO notify_cursors(source, feed_cursor) VALUES (?, ?)
			ON CONFLICT (source) DO UPDATE SET feed_cursor = excluded.feed_cursor WHERE notify_cursors.feed_cursor = ?`, source, to, from)
		return err
	})
	if err != nil {
		return fmt.Errorf("queue notifications: %w", s.Classify(err))
	}
	return nil
}

// ClaimNotifications implements store.NotifyStore.
func (s *DB) ClaimNotifications(ctx context.Context, c store.NotifyClaim) ([]*store.Notification, error) {
	limit := c.Limit
	if limit <= 0 {
		limit = 20
	}
	where, args := `status = 'pending' AND next_at <= ? AND (claim_expires <= ?`, []any{ms(c.Now), ms(c.Now)}
	if len(c.Dead) > 0 {
		where += ` OR claimed_by IN (?` + strings.Repeat(`, ?`, len(c.Dead)-1) + `)`
		for _, d := range c.Dead {
			args = append(args, d)
		}
	}
	where += `)`
	if c.Source != "" {
		where, args = where+` AND source = ?`, append(args, c.Source)
	}
	if len(c.IDs) > 0 {
		where += ` AND id IN (?` + strings.Repeat(`, ?`, len(c.IDs)-1) + `)`
		for _, id := range c.IDs {
			args = append(args, id)
		}
	}
	// A look first, outside any transaction: a deliverer polling an
	// outbox with nothing due takes no write lock.
	var one int
	switch err := s.queryRow(ctx, `SELECT 1 FROM notifications WHERE `+where+` LIMIT 1`, args...).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("claim notifications: %w", s.Classify(err))
	}
	var out []*store.Notification
	err := s.tx(ctx, func(tx *txn) error {
		out = nil
		lock := ``
		if s.d.SkipLocked {
			lock = ` FOR UPDATE SKIP LOCKED`
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+notificationCols+` FROM notifications WHERE `+where+
			` ORDER BY next_at, id LIMIT ?`+lock, append(args, limit)...)
		if err != nil {
			return err
		}
		for rows.Next() {
			n, err := scanNotification(rows)
			if err != nil {
				rows.Close()
				return err
			}
			out = append(out, n)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for _, n := range out {
			if _, err := tx.ExecContext(ctx, `UPDATE notifications SET claimed_by = ?, claim_expires = ? WHERE id = ?`,
				c.Owner, ms(c.Now.Add(c.TTL)), n.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim notifications: %w", s.Classify(err))
	}
	return out, nil
}

// NotifyClaimants implements store.NotifyStore.
func (s *DB) NotifyClaimants(ctx context.Context, now time.Time) ([]string, error) {
	rows, err := s.query(ctx, `SELECT DISTINCT claimed_by FROM notifications WHERE status = 'pending' AND claim_expires > ?`, ms(now))
	if err != nil {
		return nil, fmt.Errorf("notification claimants: %w", s.Classify(err))
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return nil, fmt.Errorf("notification claimants: %w", err)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// Attempted implements store.NotifyStore.
func (s *DB) Attempted(ctx context.Context, owner string, n *store.Notification, now time.Time) (bool, error) {
	n.UpdatedAt = now
	res, err := s.exec(ctx, `UPDATE notifications SET status = ?, attempts = ?, next_at = ?, last_error = ?, delivered_at = ?,
		updated_at = ?, claimed_by = '', claim_expires = 0 WHERE id = ? AND claimed_by = ? AND status = 'pending'`,
		string(n.Status), n.Attempts, ms(n.NextAt), n.LastError, msOrNil(n.DeliveredAt), ms(now), n.ID, owner)
	if err != nil {
		return false, fmt.Errorf("record notification %s: %w", n.ID, s.Classify(err))
	}
	k, err := res.RowsAffected()
	return k == 1, err
}

// Notifications implements store.NotifyStore.
func (s *DB) Notifications(ctx context.Context, f store.NotificationFilter) ([]*store.Notification, error) {
	where, args := []string{`1 = 1`}, []any(nil)
	if f.Status != "" {
		where, args = append(where, `status = ?`), append(args, string(f.Status))
	}
	if f.RunID != "" {
		where, args = append(where, `run_id IN (SELECT id FROM runs WHERE id = ? OR root_id = ?)`), append(args, f.RunID, f.RunID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.query(ctx, `SELECT `+notificationCols+` FROM notifications WHERE `+strings.Join(where, ` AND `)+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("notifications: %w", s.Classify(err))
	}
	defer rows.Close()
	var out []*store.Notification
	for rows.Next() {
		n, err := scanNotification(rows)
		if err != nil {
			return nil, fmt.Errorf("notifications: %w", err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// Redeliver implements store.NotifyStore.
func (s *DB) Redeliver(ctx context.Context, prefix string, now time.Time) (*store.Notification, error) {
	if prefix == "" {
		return nil, &store.NotFoundError{What: "no notification id given"}
	}
	var n *store.Notification
	err := s.tx(ctx, func(tx *txn) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+notificationCols+` FROM notifications WHERE id >= ? AND id < ? ORDER BY id LIMIT 2`,
			prefix, prefix+"\U0010FFFF")
		if err != nil {
			return err
		}
		var found []*store.Notification
		for rows.Next() {
			x, err := scanNotification(rows)
			if err != nil {
				rows.Close()
				return err
			}
			found = append(found, x)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		switch {
		case len(found) == 0:
			return &store.NotFoundError{What: fmt.Sprintf("no notification %q (agentctl notifications lists them)", prefix)}
		case len(found) > 1:
			return &store.AmbiguousError{Prefix: prefix, Matches: []string{found[0].ID, found[1].ID}, What: "notification"}
		}
		n = found[0]
		n.Status, n.Attempts, n.NextAt, n.LastError, n.DeliveredAt, n.UpdatedAt = store.NotifyPending, 0, now, "", time.Time{}, now
		_, err = tx.ExecContext(ctx, `UPDATE notifications SET status = 'pending', attempts = 0, next_at = ?, last_error = '',
			delivered_at = NULL, claimed_by = '', claim_expires = 0, updated_at = ? WHERE id = ?`, ms(now), ms(now), n.ID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("redeliver: %w", s.Classify(err))
	}
	return n, nil
}
