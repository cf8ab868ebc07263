package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// waitingCalls is true of a call waiting for a human: not a delegation,
// which its child run settles. It is the predicate of the calls_waiting
// index, which pages the inbox.
const waitingCalls = `status IN ('pending', 'interrupted') AND kind != 'delegation'`

// Feed limits.
const (
	feedLimit    = 1000
	waitingLimit = 100
)

// Feed implements store.ServerStore.
//
// Cursors are opaque to callers; they are made so. On SQLite, whose
// writers take turns, an event's id is in commit order, and the cursor
// is that id, in decimal. On PostgreSQL, identity values are handed out
// as rows are inserted, not as their transactions commit: each event row
// keeps the id of the transaction that wrote it (xid8), the feed orders
// by that id and then the event's, and returns only the events of
// transactions below the oldest one still running (the snapshot's xmin),
// so that no transaction can commit an event before one already
// returned. The cursor is "XID-ID", both in decimal. A transaction that
// wrote and stays open (on any database of the server: transaction ids
// are server-wide) holds the feed back until it ends.
func (s *DB) Feed(ctx context.Context, after string, f store.FeedFilter) ([]*store.Event, error) {
	xid, id, err := s.parseFeedCursor(after)
	if err != nil {
		return nil, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = feedLimit
	}
	cols, where, args := `id, run_id, type, data, at`, []string{`id > ?`}, []any{id}
	order := `id`
	if s.d.XID {
		// The text of the id is a column of another name: ORDER BY xid
		// would name it (and sort ids as text) were it called xid.
		cols += `, xid::text AS xid_text`
		where = []string{`(xid, id) > (CAST(? AS xid8), ?)`, `xid < pg_snapshot_xmin(pg_current_snapshot())`}
		args = []any{strconv.FormatUint(xid, 10), id}
		order = `event_rows.xid, event_rows.id`
	}
	switch {
	case f.RunID != "":
		where, args = append(where, `run_id = ?`), append(args, f.RunID)
	case f.Root != "":
		where, args = append(where, `run_id IN (SELECT id FROM runs WHERE id = ? OR root_id = ?)`), append(args, f.Root, f.Root)
	}
	// The limit is a parameter: the statement cache keeps one query per
	// shape, whatever limits callers ask for.
	q := `SELECT ` + cols + ` FROM event_rows WHERE ` + strings.Join(where, ` AND `) + ` ORDER BY ` + order + ` LIMIT ?`
	rows, err := s.query(ctx, q, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("event feed: %w", s.Classify(err))
	}
	defer rows.Close()
	var out []*store.Event
	for rows.Next() {
		var e store.Event
		var ty, data, x string
		var at int64
		dest := []any{&e.ID, &e.RunID, &ty, &data, &at}
		if s.d.XID {
			dest = append(dest, &x)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("event feed: %w", err)
		}
		e.Type, e.Data, e.At = decodeEventType(ty), json.RawMessage(data), fromMS(at)
		e.Cursor = strconv.FormatInt(e.ID, 10)
		if s.d.XID {
			e.Cursor = x + "-" + e.Cursor
		}
		out = append(out, &e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("event feed: %w", s.Classify(err))
	}
	return out, nil
}

// FeedAt implements store.ServerStore: the cursor just before the first
// event, in commit order, stamped at or after since. It reads the events
// from the first (no index orders them by time), once per stream that
// asks for a replay from a time.
func (s *DB) FeedAt(ctx context.Context, since time.Time) (string, error) {
	q := `SELECT id FROM event_rows WHERE at >= ? ORDER BY id LIMIT 1`
	if s.d.XID {
		q = `SELECT xid::text || '-' || (id - 1) FROM event_rows WHERE at >= ? ORDER BY event_rows.xid, event_rows.id LIMIT 1`
	}
	var c string
	err := s.queryRow(ctx, q, ms(since)).Scan(&c)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return s.FeedEnd(ctx)
	case err != nil:
		return "", fmt.Errorf("event feed from %s: %w", since.UTC().Format(time.RFC3339), s.Classify(err))
	}
	if !s.d.XID {
		id, err := strconv.ParseInt(c, 10, 64)
		if err != nil {
			return "", fmt.Errorf("event feed from %s: event id %q: %w", since.UTC().Format(time.RFC3339), c, err)
		}
		c = strconv.FormatInt(id-1, 10)
	}
	return c, nil
}

// parseFeedCursor reads a cursor Feed made; "" is before the first event.
func (s *DB) parseFeedCursor(c string) (xid uint64, id int64, err error) {
	if c == "" {
		return 0, 0, nil
	}
	bad := fmt.Errorf("event feed: cursor %q: %w", c, store.ErrBadCursor)
	idText := c
	if s.d.XID {
		x, rest, ok := strings.Cut(c, "-")
		if !ok {
			return 0, 0, bad
		}
		if xid, err = strconv.ParseUint(x, 10, 64); err != nil || strconv.FormatUint(xid, 10) != x {
			return 0, 0, bad
		}
		idText = rest
	}
	id, err = strconv.ParseInt(idText, 10, 64)
	if err != nil || id < 0 || strconv.FormatInt(id, 10) != idText {
		return 0, 0, bad
	}
	return xid, id, nil
}

// Waiting implements store.ServerStore. The cursor is the call's
// creation time (milliseconds), run id and sequence number, joined by
// dots: the order the inbox is listed in, from the calls_waiting index.
func (s *DB) Waiting(ctx context.Context, f store.WaitingFilter) ([]store.WaitingCall, error) {
	where, args := []string{qualify(waitingCalls, "c")}, []any(nil)
	switch f.Kind {
	case "":
	case store.KindApproval, store.KindSuspend:
		where, args = append(where, `c.status = 'pending' AND c.kind = ?`), append(args, f.Kind)
	case store.KindInterrupted:
		where = append(where, `c.status = 'interrupted'`)
	default:
		return nil, fmt.Errorf("waiting calls: no human decides a call of kind %q", f.Kind)
	}
	if f.Agent != "" {
		where, args = append(where, `r.agent = ?`), append(args, f.Agent)
	}
	if f.After != "" {
		at, run, seq, ok := parseWaitingCursor(f.After)
		if !ok {
			return nil, fmt.Errorf("waiting calls: cursor %q: %w", f.After, store.ErrBadCursor)
		}
		where = append(where, `(c.created_at, c.run_id, c.seq) > (?, ?, ?)`)
		args = append(args, at, run, seq)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = waitingLimit
	}
	// CROSS JOIN keeps SQLite walking calls_waiting in order (it would
	// rather start from the runs of an agent, then sort); PostgreSQL
	// plans it as any join.
	q := `SELECT ` + qualify(callCols, "c") + `, ` + waitingRunCols + ` FROM calls c CROSS JOIN runs r
		WHERE r.id = c.run_id AND ` + strings.Join(where, ` AND `) + ` ORDER BY c.created_at, c.run_id, c.seq LIMIT ?`
	rows, err := s.query(ctx, q, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("waiting calls: %w", s.Classify(err))
	}
	defer rows.Close()
	var out []store.WaitingCall
	for rows.Next() {
		c, r, err := scanCallRun(rows)
		if err != nil {
			return nil, fmt.Errorf("waiting calls: %w", err)
		}
		cursor := strconv.FormatInt(ms(c.CreatedAt), 10) + "." + c.RunID + "." + strconv.Itoa(c.Seq)
		out = append(out, store.WaitingCall{Call: c, Run: r, Cursor: cursor})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("waiting calls: %w", s.Classify(err))
	}
	return out, nil
}

// waitingRunCols are the run's columns the inbox reads: all but its
// state (the conversation, the largest by far), which it needs not.
var waitingRunCols = strings.Replace(qualify(runCols, "r"), "r.state", "''", 1)

// scanCallRun reads a row of a call's columns followed by its run's, in
// one Scan: scanCall's Scan runs scanRun, whose Scan reads the row.
func scanCallRun(sc scanner) (c *store.Call, r *store.Run, err error) {
	c, err = scanCall(fixedRow(func(callDest ...any) error {
		var err error
		r, err = scanRun(fixedRow(func(runDest ...any) error {
			return sc.Scan(append(append([]any{}, callDest...), runDest...)...)
		}))
		return err
	}))
	return c, r, err
}

// fixedRow adapts a function to a scanner.
type fixedRow func(...any) error

func (f fixedRow) Scan(dest ...any) error { return f(dest...) }

// parseWaitingCursor reads a cursor Waiting made.
func parseWaitingCursor(c string) (at int64, run string, seq int, ok bool) {
	i, j := strings.IndexByte(c, '.'), strings.LastIndexByte(c, '.')
	if i <= 0 || j <= i+1 || j == len(c)-1 {
		return 0, "", 0, false
	}
	at, err1 := strconv.ParseInt(c[:i], 10, 64)
	seq, err2 := strconv.Atoi(c[j+1:])
	if err1 != nil || err2 != nil || seq < 1 {
		return 0, "", 0, false
	}
	return at, c[i+1 : j], seq, true
}

// qualify prefixes each column of a list, or each column name of a
// predicate over status and kind, with a table alias.
func qualify(cols, alias string) string {
	if strings.HasPrefix(cols, "status IN") {
		return strings.NewReplacer("status", alias+".status", "kind", alias+".kind").Replace(cols)
	}
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = alias + "." + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}
