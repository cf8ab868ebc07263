package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/engine/store"
)

// Copied is what Copy did to one table.
type Copied struct {
	Table   string `json:"table"`
	Source  int    `json:"source"`  // rows in the source
	Copied  int    `json:"copied"`  // rows inserted
	Updated int    `json:"updated"` // rows brought up to date with the source
	Present int    `json:"present"` // rows the target already had, the same
	// Ahead is how many of the runs the target has taken further on its
	// own: left as they are there.
	Ahead  int `json:"ahead,omitempty"`
	Target int `json:"target"` // rows in the target afterwards
}

// Moved is a run changed both in the target, since it was copied there,
// and in the source.
type Moved struct {
	RunID string `json:"runId"`
	Why   string `json:"why"`
}

// MovedError reports runs changed both in the target, on its own, and
// in the source: Copy copied nothing. It matches store.ErrConflict.
type MovedError struct{ Runs []Moved }

func (e *MovedError) Error() string {
	parts := make([]string, 0, len(e.Runs))
	for i, m := range e.Runs {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Runs)-10))
			break
		}
		parts = append(parts, m.RunID+": "+m.Why)
	}
	return fmt.Sprintf("%d %s changed both in the source and in the target since copied there: %s",
		len(e.Runs), plural(len(e.Runs), "run", "runs"), strings.Join(parts, "; "))
}

// Is makes a MovedError a store.ErrConflict.
func (e *MovedError) Is(target error) bool { return target == store.ErrConflict }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Copy copies every run, call, decision and event (and spec snapshot,
// and API token) from one database to another, keeping run and call ids, in one
// transaction of the target. Rows are matched by their natural identity:
// a run by its id, a call by its run and id, a decision or event by its
// run and its place among the run's (the target assigns their integer
// ids, which may be used there by rows of its own). A run the target
// already has is brought up to date when the target holds an earlier
// state of it (copied before, the source went on), and left as it is when
// the source holds an earlier state of it (the target went on); when both
// changed it, Copy copies nothing and returns a *MovedError. A token is
// matched by its id; a revocation on either side is kept.
// Before committing, it verifies the contents: every row of the source,
// the same, in the target. So Copy is safe to run again.
func Copy(ctx context.Context, from, to *DB) ([]Copied, error) {
	src, err := load(ctx, func(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
		return from.db.QueryContext(ctx, from.rebind(q), args...)
	})
	if err != nil {
		return nil, fmt.Errorf("read the source: %w", err)
	}
	var out []Copied
	err = to.serial(ctx, func(tx *txn) error {
		dst, err := load(ctx, tx.QueryContext)
		if err != nil {
			return fmt.Errorf("read the target: %w", err)
		}
		p := newPlan(src, dst)
		if len(p.moved) > 0 {
			return &MovedError{Runs: p.moved}
		}
		if err := p.apply(ctx, tx); err != nil {
			return err
		}
		after, err := load(ctx, tx.QueryContext)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		if diff := verify(src, after, p.further); len(diff) > 0 {
			return fmt.Errorf("verify: the target does not hold the source's rows: %s", strings.Join(diff, "; "))
		}
		out = p.report(after)
		return nil
	})
	if err != nil {
		return nil, to.Classify(err)
	}
	return out, nil
}

// serial runs f in one transaction that no concurrent change can
// interleave with (serializable on PostgreSQL; SQLite's writes are).
func (s *DB) serial(ctx context.Context, f func(*txn) error) error {
	opts := (*sql.TxOptions)(nil)
	if s.d.Dollar {
		opts = &sql.TxOptions{Isolation: sql.LevelSerializable}
	}
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	t := &txn{tx: tx, s: s}
	err = f(t)
	if err == nil {
		err = t.appendChain(ctx)
	}
	if err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// plan is what Copy writes.
type plan struct {
	src, dst  *snapshot
	specs     []row
	newRuns   []row
	runs      []row // to update
	newCalls  []row
	calls     []row // to update
	decisions []row // new, in the source's order
	events    []row
	// escalations are the steps taken the target lacks.
	escalations []row
	tokens      []row // new
	revoked     []row // tokens the source revoked since copied
	counts      map[string]*Copied
	moved       []Moved
	further     []string // runs the target took further
}

func newPlan(src, dst *snapshot) *plan {
	p := &plan{src: src, dst: dst, counts: map[string]*Copied{}}
	for _, t := range copiedTables {
		p.counts[t] = &Copied{Table: t}
	}
	p.planTokens()
	for _, h := range src.specOrder {
		p.counts["specs"].Source++
		if t, ok := dst.specs[h]; ok && same(t, src.specs[h]) {
			p.counts["specs"].Present++
		} else if !ok {
			p.specs = append(p.specs, src.specs[h])
		} else {
			p.moved = append(p.moved, Moved{RunID: "-", Why: "spec snapshot " + h + " differs"})
		}
	}
	// Runs the target took further on its own, or changed both there
	// and in the source: their rows are not written.
	skip := map[string]bool{}
	for _, id := range src.runOrder {
		if _, ok := dst.runs[id]; !ok {
			p.run(id)
			continue
		}
		why := earlier(dst, src, id)
		switch {
		case why == "":
			p.run(id)
		case earlier(src, dst, id) == "":
			p.ahead(id)
			skip[id] = true
		default:
			p.moved, skip[id] = append(p.moved, Moved{RunID: id, Why: why}), true
		}
	}
	p.decisions = appended(src.decOrder, src.decisions, dst.decisions, skip, p.counts["decisions"])
	p.events = appended(src.evOrder, src.events, dst.events, skip, p.counts["events"])
	return p
}

// copiedTables are the tables Copy reports on, in order.
var copiedTables = []string{"specs", "runs", "calls", "decisions", "events", "escalations", "tokens"}

// planTokens plans the API tokens: those the target lacks are copied, a
// revocation in the source is carried over, one in the target is kept.
func (p *plan) planTokens() {
	c := p.counts["tokens"]
	for _, id := range p.src.tokOrder {
		c.Source++
		s, t := p.src.tokens[id], p.dst.tokens[id]
		switch {
		case t == nil:
			p.tokens = append(p.tokens, s)
		case same(s, t) || revokedLater(s, t):
			c.Present++
		case revokedLater(t, s):
			p.revoked = append(p.revoked, s)
		default:
			p.moved = append(p.moved, Moved{RunID: "-", Why: "token " + id + " differs"})
		}
	}
}

// appended returns the decisions (or events) of the source, in its
// order, that the target lacks: a run's first rows are those the target
// has, when it has the run; the rest are new, unless the run is skipped.
func appended(order []ref, src, dst map[string][]row, skip map[string]bool, c *Copied) []row {
	var out []row
	for _, r := range order {
		c.Source++
		switch {
		case r.i < len(dst[r.run]):
			c.Present++
		case !skip[r.run]:
			out = append(out, src[r.run][r.i])
		}
	}
	return out
}

// ahead counts run id, which the target took further on its own: its
// rows there are left as they are.
func (p *plan) ahead(id string) {
	p.counts["runs"].Source++
	p.counts["runs"].Present++
	p.counts["runs"].Ahead++
	p.further = append(p.further, id)
	for range p.src.calls[id] {
		p.counts["calls"].Source++
		p.counts["calls"].Present++
	}
	for range p.src.escalations[id] {
		p.counts["escalations"].Source++
		p.counts["escalations"].Present++
	}
}

// run plans run id and its calls, which the target lacks, holds the
// same, or holds in an earlier state.
func (p *plan) run(id string) {
	rc, cc := p.counts["runs"], p.counts["calls"]
	rc.Source++
	switch t, ok := p.dst.runs[id]; {
	case !ok:
		p.newRuns = append(p.newRuns, p.src.runs[id])
	case same(t, p.src.runs[id]):
		rc.Present++
	default:
		p.runs = append(p.runs, p.src.runs[id])
	}
	for c, r := range p.src.calls[id] {
		cc.Source++
		switch t, ok := p.dst.calls[id][c]; {
		case !ok:
			p.newCalls = append(p.newCalls, r)
		case same(t, r):
			cc.Present++
		default:
			p.calls = append(p.calls, r)
		}
	}
	ec := p.counts["escalations"]
	for _, k := range slices.Sorted(maps.Keys(p.src.escalations[id])) {
		r := p.src.escalations[id][k]
		ec.Source++
		if _, ok := p.dst.escalations[id][k]; ok {
			ec.Present++
		} else {
			p.escalations = append(p.escalations, r)
		}
	}
}

// earlier says why a's state of run id is not an earlier state of b's,
// or the same; "" when it is one.
func earlier(a, b *snapshot, id string) string {
	ar, br := a.runs[id], b.runs[id]
	up := col(runsTable, "updated_at")
	if !same(ar, br) && ms64(ar, up) >= ms64(br, up) {
		return "the run was updated there since"
	}
	cup := col(callsTable, "updated_at")
	for c, ac := range a.calls[id] {
		bc, ok := b.calls[id][c]
		switch {
		case !ok:
			return "call " + c + " was made there"
		case !same(ac, bc) && ms64(ac, cup) >= ms64(bc, cup):
			return "call " + c + " changed there"
		}
	}
	if !prefix(a.decisions[id], b.decisions[id]) {
		return "decisions were made there"
	}
	if !prefix(a.events[id], b.events[id]) {
		return "events were recorded there"
	}
	if !within(a.escalations[id], b.escalations[id]) {
		return "escalation steps were taken there"
	}
	return ""
}

// col is the index of a column of a table; -1 when it has none.
func col(t table, name string) int {
	for i, c := range strings.Split(t.cols, ",") {
		if strings.TrimSpace(c) == name {
			return i
		}
	}
	return -1
}

// ms64 is the integer at column i of r (a time in milliseconds).
func ms64(r row, i int) int64 {
	if i < 0 || i >= len(r) {
		return 0
	}
	n, _ := norm(r[i]).(int64)
	return n
}

// apply writes the plan: parents first, decisions and events in the
// source's order.
func (p *plan) apply(ctx context.Context, tx *txn) error {
	steps := []struct {
		t      table
		rows   []row
		update bool
	}{
		{specsTable, p.specs, false},
		{runsTable, p.newRuns, false}, {runsTable, p.runs, true},
		{callsTable, p.newCalls, false}, {callsTable, p.calls, true},
		{decisionsTable, p.decisions, false}, {eventsTable, p.events, false}, {escTable, p.escalations, false},
		{tokensTable, p.tokens, false}, {tokensTable, p.revoked, true},
	}
	var ids []any // of the decisions copied
	for _, st := range steps {
		q := insertSQL(st.t)
		if st.update {
			q = updateSQL(st.t)
		}
		for _, r := range st.rows {
			args := []any(r)
			if st.update {
				args = updateArgs(st.t, r)
			}
			if st.t.name == decisionsTable.name {
				var id int64
				if err := tx.QueryRowContext(ctx, q+` RETURNING id`, args...).Scan(&id); err != nil {
					return fmt.Errorf("write %s: %w", st.t.name, err)
				}
				ids = append(ids, id)
			} else if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return fmt.Errorf("write %s: %w", st.t.name, err)
			}
			if st.update {
				p.counts[st.t.name].Updated++
			} else {
				p.counts[st.t.name].Copied++
			}
		}
	}
	return chainCopied(ctx, tx, ids)
}

// chainCopied queues the chain's records of the decisions copied, ids in
// order, as they now stand in the target: its verify would otherwise
// take them for decisions added behind agentctl's back.
func chainCopied(ctx context.Context, tx *txn, ids []any) error {
	recs, err := decisionRecords(ctx, tx.QueryContext, ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		tx.audit(recs[id.(int64)])
	}
	return nil
}

func insertSQL(t table) string {
	n := len(strings.Split(t.cols, ","))
	return `INSERT INTO ` + t.in() + `(` + t.cols + `) VALUES (?` + strings.Repeat(", ?", n-1) + `)`
}

// keys are how many leading columns of a table identify a row.
func keys(t table) int {
	if t.name == callsTable.name {
		return 2 // run_id, call_id
	}
	return 1
}

// updateSQL sets every column but the keys of the row the keys name.
func updateSQL(t table) string {
	cols := strings.Split(t.cols, ",")
	k := keys(t)
	set := make([]string, 0, len(cols)-k)
	for _, c := range cols[k:] {
		set = append(set, strings.TrimSpace(c)+" = ?")
	}
	where := make([]string, k)
	for i, c := range cols[:k] {
		where[i] = strings.TrimSpace(c) + " = ?"
	}
	return `UPDATE ` + t.in() + ` SET ` + strings.Join(set, ", ") + ` WHERE ` + strings.Join(where, " AND ")
}

func updateArgs(t table, r row) []any {
	k := keys(t)
	return append(append([]any{}, r[k:]...), r[:k]...)
}

// report counts the target's rows afterwards.
func (p *plan) report(after *snapshot) []Copied {
	n := map[string]int{"specs": len(after.specs), "runs": len(after.runs), "decisions": len(after.decOrder), "events": len(after.evOrder),
		"tokens": len(after.tokens)}
	for _, cs := range after.calls {
		n["calls"] += len(cs)
	}
	for _, es := range after.escalations {
		n["escalations"] += len(es)
	}
	var out []Copied
	for _, t := range copiedTables {
		c := *p.counts[t]
		c.Target = n[t]
		out = append(out, c)
	}
	return out
}
