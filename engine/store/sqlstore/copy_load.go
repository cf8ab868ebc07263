package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// A table Copy copies, its columns without the integer id decisions and
// events have: their rows are matched by their place in their run, not
// by an id (the target may use the source's ids for rows of its own).
type table struct {
	name, cols string
	sql        string // its name in SQL, when not name
}

// in is the table's name in SQL.
func (t table) in() string {
	if t.sql != "" {
		return t.sql
	}
	return t.name
}

var (
	specsTable     = table{name: "specs", cols: "hash, body"}
	runsTable      = table{name: "runs", cols: runCols + ", owner, lease_expires, ready"}
	callsTable     = table{name: "calls", cols: callCols}
	decisionsTable = table{name: "decisions", cols: "run_id, call_id, action, by_name, os_user, reason, at, args_before, args_after, data, via"}
	eventsTable    = table{name: "events", cols: "run_id, type, data, at", sql: "event_rows"} // types as stored
	tokensTable    = table{name: "tokens", cols: tokenCols}
	escTable       = table{name: "escalations", cols: "run_id, call_id, step, kind, at"}
)

// row is one row's values as the driver read them.
type row []any

// same reports whether two rows hold the same values, whichever
// backend read them (TEXT or BLOB, any integer width).
func same(a, b row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if norm(a[i]) != norm(b[i]) {
			return false
		}
	}
	return true
}

func norm(v any) any {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case int16:
		return int64(x)
	}
	return v
}

// ref is a decision or event by its natural identity: its run and its
// place among the run's rows of that table.
type ref struct {
	run string
	i   int
}

// snapshot is a database's rows by natural identity.
type snapshot struct {
	specs     map[string]row
	specOrder []string
	runs      map[string]row
	runOrder  []string
	calls     map[string]map[string]row // by run, then call id
	decisions map[string][]row          // by run, in id order
	events    map[string][]row
	decOrder  []ref // every decision, in id order
	evOrder   []ref
	tokens    map[string]row // by id
	tokOrder  []string
	// escalations are the steps taken, by run, then call/step.
	escalations map[string]map[string]row
}

// queryFunc runs a read: on a database, or in a transaction.
type queryFunc func(ctx context.Context, q string, args ...any) (*sql.Rows, error)

// load reads every row Copy compares.
func load(ctx context.Context, q queryFunc) (*snapshot, error) {
	s := &snapshot{specs: map[string]row{}, runs: map[string]row{}, calls: map[string]map[string]row{},
		decisions: map[string][]row{}, events: map[string][]row{}, tokens: map[string]row{}, escalations: map[string]map[string]row{}}
	err := scanAll(ctx, q, `SELECT `+specsTable.cols+` FROM specs ORDER BY hash`, func(r row) {
		h := fmt.Sprint(norm(r[0]))
		s.specs[h], s.specOrder = r, append(s.specOrder, h)
	})
	if err == nil {
		err = scanAll(ctx, q, `SELECT `+runsTable.cols+` FROM runs ORDER BY id`, func(r row) {
			id := fmt.Sprint(norm(r[0]))
			s.runs[id], s.runOrder = r, append(s.runOrder, id)
		})
	}
	if err == nil {
		err = scanAll(ctx, q, `SELECT `+callsTable.cols+` FROM calls ORDER BY run_id, call_id`, func(r row) {
			run, call := fmt.Sprint(norm(r[0])), fmt.Sprint(norm(r[1]))
			if s.calls[run] == nil {
				s.calls[run] = map[string]row{}
			}
			s.calls[run][call] = r
		})
	}
	if err == nil {
		err = scanAll(ctx, q, `SELECT `+decisionsTable.cols+` FROM decisions ORDER BY id`, func(r row) {
			run := fmt.Sprint(norm(r[0]))
			s.decOrder = append(s.decOrder, ref{run, len(s.decisions[run])})
			s.decisions[run] = append(s.decisions[run], r)
		})
	}
	if err == nil {
		err = scanAll(ctx, q, `SELECT `+eventsTable.cols+` FROM `+eventsTable.in()+` ORDER BY id`, func(r row) {
			run := fmt.Sprint(norm(r[0]))
			s.evOrder = append(s.evOrder, ref{run, len(s.events[run])})
			s.events[run] = append(s.events[run], r)
		})
	}
	if err == nil {
		err = scanAll(ctx, q, `SELECT `+escTable.cols+` FROM escalations ORDER BY run_id, call_id, step`, func(r row) {
			run := fmt.Sprint(norm(r[0]))
			if s.escalations[run] == nil {
				s.escalations[run] = map[string]row{}
			}
			s.escalations[run][fmt.Sprint(norm(r[1]), "/", norm(r[2]))] = r
		})
	}
	if err == nil {
		err = scanAll(ctx, q, `SELECT `+tokensTable.cols+` FROM tokens ORDER BY id`, func(r row) {
			id := fmt.Sprint(norm(r[0]))
			s.tokens[id], s.tokOrder = r, append(s.tokOrder, id)
		})
	}
	return s, err
}

// scanAll reads every row of a query.
func scanAll(ctx context.Context, q queryFunc, query string, each func(row)) error {
	rows, err := q(ctx, query)
	if err != nil {
		return fmt.Errorf("read %s: %w", tableOf(query), err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	for rows.Next() {
		vals := make(row, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("read %s: %w", tableOf(query), err)
		}
		each(vals)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", tableOf(query), err)
	}
	return nil
}

func tableOf(query string) string {
	_, after, _ := strings.Cut(query, " FROM ")
	name, _, _ := strings.Cut(after, " ")
	return name
}

// prefix reports whether the rows of a are the first rows of b.
func prefix(a, b []row) bool {
	if len(a) > len(b) {
		return false
	}
	for i := range a {
		if !same(a[i], b[i]) {
			return false
		}
	}
	return true
}

// verify compares, run by run, what the target holds with the source:
// the run, each of its calls, its decisions and events in order, and the
// spec snapshots; of a run the target took further, that it holds the
// source's state as an earlier one. It returns the first differences.
func verify(src, dst *snapshot, further []string) []string {
	var diff []string
	add := func(format string, args ...any) {
		if len(diff) < 10 {
			diff = append(diff, fmt.Sprintf(format, args...))
		}
	}
	for _, h := range src.specOrder {
		if t, ok := dst.specs[h]; !ok || !same(src.specs[h], t) {
			add("spec %s differs", h)
		}
	}
	for _, id := range src.tokOrder {
		if t, ok := dst.tokens[id]; !ok || !same(src.tokens[id], t) && !revokedLater(src.tokens[id], t) {
			add("token %s differs", id)
		}
	}
	ahead := map[string]bool{}
	for _, id := range further {
		ahead[id] = true
		if _, ok := dst.runs[id]; !ok || earlier(src, dst, id) != "" {
			add("run %s: the target does not hold it further along", id)
		}
	}
	for _, id := range src.runOrder {
		if ahead[id] {
			continue
		}
		if t, ok := dst.runs[id]; !ok || !same(src.runs[id], t) {
			add("run %s differs", id)
		}
		if len(src.calls[id]) != len(dst.calls[id]) {
			add("run %s: %d calls in the target, %d in the source", id, len(dst.calls[id]), len(src.calls[id]))
		}
		for c, r := range src.calls[id] {
			if t, ok := dst.calls[id][c]; !ok || !same(r, t) {
				add("run %s: call %s differs", id, c)
			}
		}
		if a, b := src.decisions[id], dst.decisions[id]; len(a) != len(b) || !prefix(a, b) {
			add("run %s: its decisions differ", id)
		}
		if a, b := src.events[id], dst.events[id]; len(a) != len(b) || !prefix(a, b) {
			add("run %s: its events differ", id)
		}
		if !within(src.escalations[id], dst.escalations[id]) || len(src.escalations[id]) != len(dst.escalations[id]) {
			add("run %s: its escalation steps differ", id)
		}
	}
	return diff
}

// revokedLater reports whether token row b is token row a revoked (a
// not): the same token, taken further.
func revokedLater(a, b row) bool {
	i := col(tokensTable, "revoked_at")
	if norm(a[i]) != nil || norm(b[i]) == nil {
		return false
	}
	a2, b2 := append(row{}, a...), append(row{}, b...)
	a2[i], b2[i] = nil, nil
	return same(a2, b2)
}

// within reports whether every row of a is in b, the same.
func within(a, b map[string]row) bool {
	for k, r := range a {
		if t, ok := b[k]; !ok || !same(r, t) {
			return false
		}
	}
	return true
}
