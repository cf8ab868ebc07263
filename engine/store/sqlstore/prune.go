package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/internal/wait"
)

// prunableRoot is true of a root run (r) whose tree may be pruned: the
// root and every child run ended (completed or failed) before the
// cutoff (its two arguments), and the root is not the one excluded (a
// third argument: the tree of SQLite's newest event). The root's test
// is the runs_ended index's predicate; children are found by runs_root.
const prunableRoot = `r.status IN ('completed', 'failed') AND r.updated_at < ? AND (r.root_id IS NULL OR r.root_id = r.id)
	AND NOT EXISTS (SELECT 1 FROM runs c WHERE c.root_id = r.id AND c.id <> r.id
		AND (c.status NOT IN ('completed', 'failed') OR c.updated_at >= ?))
	AND r.id <> ?`

// inChunk is the most ids one IN list holds.
const inChunk = 500

// sqlitePause is the default pause between batches on SQLite: longer
// than the longest sleep of SQLite's busy handler (100ms), so that a
// writer waiting for the lock gets it before the next batch takes it.
const sqlitePause = 110 * time.Millisecond

var _ store.Pruner = (*DB)(nil)

// prunedRun is a run of a tree being pruned.
type prunedRun struct {
	id, root, agent, startedBy string
	status                     store.Status
	created, updated           int64
}

// Prune implements store.Pruner.
func (s *DB) Prune(ctx context.Context, o store.PruneOptions) (total store.PruneCounts, err error) {
	if o.Before.IsZero() {
		return total, errors.New("prune: no cutoff: PruneOptions.Before is required")
	}
	if o.DryRun {
		c, err := s.pruneCount(ctx, o)
		if err != nil {
			return c, fmt.Errorf("prune: count: %w", s.Classify(err))
		}
		c.Kept, err = s.kept(ctx, o)
		return c, err
	}
	defer func() {
		if err == nil {
			total.Kept, err = s.kept(ctx, o)
		}
	}()
	batch := cmp.Or(max(o.Batch, 0), store.DefaultPruneBatch)
	pause := o.Pause
	if pause == 0 && !s.postgres() {
		pause = sqlitePause
	}
	for more := true; more; {
		var c store.PruneCounts
		err := s.tx(ctx, func(tx *txn) (err error) {
			c = store.PruneCounts{}
			more, err = s.pruneBatch(ctx, tx, o, batch, &c)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("prune: batch %d: %w", total.Batches+1, s.Classify(err))
		}
		if c.Runs > 0 {
			total.Runs, total.Calls, total.Events, total.Decisions = total.Runs+c.Runs, total.Calls+c.Calls, total.Events+c.Events, total.Decisions+c.Decisions
			total.Notifications, total.Tombstones, total.Batches = total.Notifications+c.Notifications, total.Tombstones+c.Tombstones, total.Batches+1
		}
		if more && pause > 0 {
			if err := wait.For(ctx, pause); err != nil {
				return total, fmt.Errorf("prune: after batch %d: %w", total.Batches, err)
			}
		}
	}
	if total.Runs == 0 {
		return total, nil
	}
	n, err := s.pruneSpecs(ctx)
	if err != nil {
		n, err = s.pruneSpecs(ctx) // a run made meanwhile took a spec: once more
	}
	total.Specs = n
	if err != nil {
		return total, fmt.Errorf("prune: delete unreferenced spec snapshots: %w", s.Classify(err))
	}
	return total, nil
}

// pruneBatch deletes, in tx, the oldest prunable trees up to batch runs
// (at least one tree), and reports whether more may be left.
func (s *DB) pruneBatch(ctx context.Context, tx *txn, o store.PruneOptions, batch int, c *store.PruneCounts) (more bool, err error) {
	keep, err := s.newestRoot(ctx, tx.QueryRowContext)
	if err != nil {
		return false, err
	}
	var roots []string
	rows, err := tx.QueryContext(ctx, `SELECT r.id FROM runs r WHERE `+prunableRoot+` ORDER BY r.updated_at, r.id LIMIT ?`,
		ms(o.Before), ms(o.Before), keep, batch)
	if err == nil {
		roots, err = scanStrings(rows)
	}
	if err != nil || len(roots) == 0 {
		return false, err
	}
	trees, err := s.lockTrees(ctx, tx, roots)
	if err != nil {
		return false, err
	}
	var runs []prunedRun
	for _, root := range roots {
		t := trees[root]
		if !ended(t, root, ms(o.Before)) {
			continue // it changed since it was chosen: left alone
		}
		if len(runs) > 0 && len(runs)+len(t) > batch {
			return true, s.deleteRuns(ctx, tx, runs, o.KeepAudit, c)
		}
		runs = append(runs, t...)
	}
	if len(runs) == 0 {
		return false, nil // every tree chosen changed meanwhile: the next prune sees them again
	}
	return len(roots) == batch, s.deleteRuns(ctx, tx, runs, o.KeepAudit, c)
}

// kept names the tree newestRoot keeps if the cutoff takes it in.
func (s *DB) kept(ctx context.Context, o store.PruneOptions) (string, error) {
	keep, err := s.newestRoot(ctx, s.queryRow)
	if err != nil || keep == "" {
		return "", err
	}
	var n int
	err = s.queryRow(ctx, `SELECT count(*) FROM runs r WHERE r.id = ? AND `+prunableRoot, keep, ms(o.Before), ms(o.Before), "").Scan(&n)
	if err != nil || n == 0 {
		return "", err
	}
	return keep, nil
}

// newestRoot names, on SQLite, the root of the tree holding the newest
// event, which is kept: SQLite gives a new row the highest id plus one,
// so deleting the newest event would give its id again, behind the
// cursors of feed readers. PostgreSQL never reuses an identity value.
func (s *DB) newestRoot(ctx context.Context, queryRow func(context.Context, string, ...any) *sql.Row) (string, error) {
	if s.postgres() {
		return "", nil
	}
	var root string
	err := queryRow(ctx, `SELECT COALESCE(r.root_id, r.id) FROM event_rows e JOIN runs r ON r.id = e.run_id
		WHERE e.id = (SELECT MAX(id) FROM event_rows)`).Scan(&root)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return root, err
}

// lockTrees reads every run of the trees of roots, by root, locking
// their rows on PostgreSQL (SQLite's transaction holds the write lock
// already): a run another process claims meanwhile (a message sent to a
// completed run) is read as it is now, or waits for this transaction.
func (s *DB) lockTrees(ctx context.Context, tx *txn, roots []string) (map[string][]prunedRun, error) {
	sorted := slices.Sorted(slices.Values(roots)) // rows locked in one order
	lock := ``
	if s.d.LockRun {
		lock = ` FOR UPDATE`
	}
	trees := map[string][]prunedRun{}
	err := inChunks(sorted, func(ph string, args []any) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, COALESCE(root_id, id), agent, status, started_by, created_at, updated_at
			FROM runs WHERE id IN (`+ph+`) OR root_id IN (`+ph+`) ORDER BY id`+lock, append(args, args...)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r prunedRun
			if err := rows.Scan(&r.id, &r.root, &r.agent, &r.status, &r.startedBy, &r.created, &r.updated); err != nil {
				return err
			}
			trees[r.root] = append(trees[r.root], r)
		}
		return rows.Err()
	})
	return trees, err
}

// ended reports whether a tree, as locked, may be pruned: its root is
// there, and every run ended before the cutoff.
func ended(tree []prunedRun, root string, before int64) bool {
	if !slices.ContainsFunc(tree, func(r prunedRun) bool { return r.id == root }) {
		return false
	}
	for _, r := range tree {
		if !r.status.Terminal() || r.updated >= before {
			return false
		}
	}
	return true
}

// deleteRuns deletes runs and every row that refers to them, after
// their tombstones when keep is set, children before their parents.
func (s *DB) deleteRuns(ctx context.Context, tx *txn, runs []prunedRun, keep bool, c *store.PruneCounts) error {
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.id
	}
	if keep {
		n, err := s.writeTombstones(ctx, tx, runs, ids)
		if err != nil {
			return fmt.Errorf("tombstones: %w", err)
		}
		c.Tombstones = n
	}
	if err := s.pruneChain(ctx, tx, ids, keep); err != nil {
		return err
	}
	for _, d := range []struct {
		table, where string
		n            *int
	}{
		{"notifications", "run_id", &c.Notifications},
		{"event_rows", "run_id", &c.Events},
		{"decisions", "run_id", &c.Decisions},
		{"escalations", "run_id", new(int)},
		{"calls", "run_id", &c.Calls},
		{"runs", "root_id IS NOT NULL AND root_id <> id AND id", &c.Runs}, // the children first
		{"runs", "id", &c.Runs},
	} {
		err := inChunks(ids, func(ph string, args []any) error {
			res, err := tx.ExecContext(ctx, `DELETE FROM `+d.table+` WHERE `+d.where+` IN (`+ph+`)`, args...)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			*d.n += int(n)
			return err
		})
		if err != nil {
			return fmt.Errorf("delete %s: %w", d.table, err)
		}
	}
	return nil
}

// inChunks calls f with placeholders and arguments for ids, inChunk at
// a time.
func inChunks(ids []string, f func(ph string, args []any) error) error {
	for len(ids) > 0 {
		n := min(inChunk, len(ids))
		args := make([]any, n)
		for i, id := range ids[:n] {
			args[i] = id
		}
		if err := f("?"+strings.Repeat(", ?", n-1), args); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// scanStrings reads a column of strings, and closes rows.
func scanStrings(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// pruneSpecs deletes the spec snapshots no run refers to, in a
// transaction of its own.
func (s *DB) pruneSpecs(ctx context.Context) (int, error) {
	var n int64
	err := s.tx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM specs WHERE hash NOT IN (SELECT spec_hash FROM runs)`)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// pruneCount counts what Prune would delete, in one statement (one
// snapshot), changing nothing.
func (s *DB) pruneCount(ctx context.Context, o store.PruneOptions) (store.PruneCounts, error) {
	var c store.PruneCounts
	keep, err := s.newestRoot(ctx, s.queryRow)
	if err != nil {
		return c, err
	}
	err = s.queryRow(ctx, `WITH roots AS (SELECT r.id FROM runs r WHERE `+prunableRoot+`),
		doomed AS (SELECT t.id FROM runs t WHERE t.id IN (SELECT id FROM roots) OR t.root_id IN (SELECT id FROM roots))
		SELECT (SELECT count(*) FROM doomed),
			(SELECT count(*) FROM calls WHERE run_id IN (SELECT id FROM doomed)),
			(SELECT count(*) FROM event_rows WHERE run_id IN (SELECT id FROM doomed)),
			(SELECT count(*) FROM decisions WHERE run_id IN (SELECT id FROM doomed)),
			(SELECT count(*) FROM notifications WHERE run_id IN (SELECT id FROM doomed)),
			(SELECT count(*) FROM specs WHERE hash NOT IN (SELECT spec_hash FROM runs WHERE id NOT IN (SELECT id FROM doomed)))`,
		ms(o.Before), ms(o.Before), keep).Scan(&c.Runs, &c.Calls, &c.Events, &c.Decisions, &c.Notifications, &c.Specs)
	if c.Runs == 0 {
		c.Specs = 0 // a prune that deletes no run deletes no spec
	}
	if o.KeepAudit {
		c.Tombstones = c.Runs
	}
	return c, err
}

// postgres reports whether the backend is PostgreSQL.
func (s *DB) postgres() bool { return s.d.Name == "postgres" }

// tombDecision is a decision as a tombstone keeps it, in the JSON
// array of its decisions column: the decisions table's fields, with the
// call's tool (the call is pruned too).
type tombDecision struct {
	CallID     string          `json:"callId"`
	Tool       string          `json:"tool"`
	Action     store.Action    `json:"action"`
	By         string          `json:"by"`
	OSUser     string          `json:"osUser"`
	Via        string          `json:"via,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	ArgsBefore json.RawMessage `json:"argsBefore,omitempty"`
	ArgsAfter  json.RawMessage `json:"argsAfter,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	At         int64           `json:"at"` // milliseconds since the epoch, as in the decisions table
	// Path names the agents from the root's to the run's, for a run
	// below a root; tombstones written before it have none.
	Path []string `json:"path,omitempty"`
}

// jsonText keeps a stored JSON text as it is, and anything else (not
// JSON after all) as a JSON string: a tombstone is always valid JSON.
func jsonText(v sql.NullString) json.RawMessage {
	switch {
	case !v.Valid:
		return nil
	case json.Valid([]byte(v.String)):
		return json.RawMessage(v.String)
	}
	b, _ := json.Marshal(v.String)
	return b
}

// writeTombstones writes, in tx, one tombstone per run with its
// decisions, and returns how many.
func (s *DB) writeTombstones(ctx context.Context, tx *txn, runs []prunedRun, ids []string) (int, error) {
	byRun := map[string][]tombDecision{}
	err := inChunks(ids, func(ph string, args []any) error {
		rows, err := tx.QueryContext(ctx, `SELECT d.run_id, d.call_id, COALESCE(c.tool, ''), d.action, d.by_name, d.os_user, d.via, d.reason,
			d.args_before, d.args_after, d.data, d.at, r.path
			FROM decisions d LEFT JOIN calls c ON c.run_id = d.run_id AND c.call_id = d.call_id JOIN runs r ON r.id = d.run_id
			WHERE d.run_id IN (`+ph+`) ORDER BY d.id`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var run string
			var d tombDecision
			var before, after, data sql.NullString
			var path string
			if err := rows.Scan(&run, &d.CallID, &d.Tool, &d.Action, &d.By, &d.OSUser, &d.Via, &d.Reason, &before, &after, &data, &d.At, &path); err != nil {
				return err
			}
			if path != "" && path != "[]" {
				if err := json.Unmarshal([]byte(path), &d.Path); err != nil {
					return fmt.Errorf("run %s: path: %w", run, err)
				}
			}
			d.ArgsBefore, d.ArgsAfter, d.Data = jsonText(before), jsonText(after), jsonText(data)
			byRun[run] = append(byRun[run], d)
		}
		return rows.Err()
	})
	if err != nil {
		return 0, fmt.Errorf("decisions: %w", err)
	}
	now := ms(s.now())
	const perInsert = 50 // rows of nine values
	for chunk := range slices.Chunk(runs, perInsert) {
		args := make([]any, 0, 9*len(chunk))
		for _, r := range chunk {
			ds, err := json.Marshal(append([]tombDecision{}, byRun[r.id]...)) // none: []
			if err != nil {
				return 0, fmt.Errorf("decisions of run %s: %w", r.id, err)
			}
			args = append(args, r.id, r.root, r.agent, r.status, r.startedBy, r.created, r.updated, now, string(ds))
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO tombstones(id, root_id, agent, status, started_by, created_at, updated_at, pruned_at, decisions)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`+strings.Repeat(`, (?, ?, ?, ?, ?, ?, ?, ?, ?)`, len(chunk)-1)+`
			ON CONFLICT (id) DO UPDATE SET root_id = excluded.root_id, agent = excluded.agent, status = excluded.status,
				started_by = excluded.started_by, created_at = excluded.created_at, updated_at = excluded.updated_at,
				pruned_at = excluded.pruned_at, decisions = excluded.decisions`, args...)
		if err != nil {
			return 0, err
		}
	}
	return len(runs), nil
}

const tombCols = `id, root_id, agent, status, started_by, created_at, updated_at, pruned_at, decisions`

func scanTombstone(sc scanner, extra ...any) (*store.Tombstone, error) {
	var t store.Tombstone
	var created, updated, pruned int64
	var decisions string
	if err := sc.Scan(append([]any{&t.ID, &t.RootID, &t.Agent, &t.Status, &t.StartedBy, &created, &updated, &pruned, &decisions}, extra...)...); err != nil {
		return nil, err
	}
	t.CreatedAt, t.UpdatedAt, t.PrunedAt = fromMS(created), fromMS(updated), fromMS(pruned)
	var ds []tombDecision
	if err := json.Unmarshal([]byte(decisions), &ds); err != nil {
		return nil, fmt.Errorf("tombstone of run %s: decisions: %w", t.ID, err)
	}
	for _, d := range ds {
		t.Decisions = append(t.Decisions, store.Audited{Agent: t.Agent, RootID: t.RootID, Tool: d.Tool, Path: d.Path, Decision: store.Decision{
			RunID: t.ID, CallID: d.CallID, Action: d.Action, By: d.By, OSUser: d.OSUser, Via: d.Via, Reason: d.Reason,
			ArgsBefore: d.ArgsBefore, ArgsAfter: d.ArgsAfter, Data: d.Data, At: fromMS(d.At)}})
	}
	return &t, nil
}

// Tombstone implements store.Pruner.
func (s *DB) Tombstone(ctx context.Context, id string) (*store.Tombstone, error) {
	t, err := scanTombstone(s.queryRow(ctx, `SELECT `+tombCols+` FROM tombstones WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &store.NotFoundError{What: "no tombstone of run " + id}
	}
	if err != nil {
		return nil, fmt.Errorf("tombstone of run %s: %w", id, s.Classify(err))
	}
	return t, nil
}

// auditTombstones returns the decisions f selects that tombstones keep,
// in time order. A run's decisions were all made after it was created
// and before it was pruned: those bound the rows read.
func (s *DB) auditTombstones(ctx context.Context, f store.AuditFilter) ([]*store.Audited, error) {
	q := `SELECT t.` + strings.ReplaceAll(tombCols, ", ", ", t.") + `, COALESCE(rt.agent, t.agent)
		FROM tombstones t LEFT JOIN tombstones rt ON rt.id = t.root_id WHERE t.decisions <> '[]'`
	var args []any
	if !f.Since.IsZero() {
		q, args = q+` AND t.pruned_at >= ?`, append(args, ms(f.Since))
	}
	if !f.Until.IsZero() {
		q, args = q+` AND t.created_at < ?`, append(args, ms(f.Until))
	}
	if f.Agent != "" && f.RootOnly {
		q, args = q+` AND t.agent = ?`, append(args, f.Agent)
	} else if f.Agent != "" { // and below: by the decisions' paths, checked again below
		q, args = q+` AND (t.agent = ? OR rt.agent = ? OR t.decisions LIKE ? ESCAPE '!')`, append(args, f.Agent, f.Agent, pathHas(f.Agent))
	}
	rows, err := s.query(ctx, q+` ORDER BY t.pruned_at, t.id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.Audited
	for rows.Next() {
		var rootAgent string
		t, err := scanTombstone(rows, &rootAgent)
		if err != nil {
			return nil, err
		}
		for i := range t.Decisions {
			d := &t.Decisions[i]
			if d.Path == nil && rootAgent != t.Agent { // kept before paths were
				d.Path = []string{rootAgent, t.Agent}
			} else if d.Path == nil {
				d.Path = []string{t.Agent}
			}
			if f.Agent != "" && !f.RootOnly && t.Agent != f.Agent && !slices.Contains(d.Path, f.Agent) {
				continue
			}
			if (f.Since.IsZero() || !d.At.Before(f.Since)) && (f.Until.IsZero() || d.At.Before(f.Until)) {
				out = append(out, d)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b *store.Audited) int { return a.At.Compare(b.At) })
	return out, rows.Err()
}

// auditCursor reads an audit cursor: the id of the last live decision
// listed, and how many of the tombstones' were.
func auditCursor(c string) (live int64, kept int, err error) {
	if c == "" {
		return 0, 0, nil
	}
	l, k, ok := strings.Cut(c, ".")
	live, err1 := strconv.ParseInt(l, 10, 64)
	kept, err2 := strconv.Atoi(k)
	if !ok || err1 != nil || err2 != nil || live < 0 || kept < 0 {
		return 0, 0, fmt.Errorf("audit trail: cursor %q: %w", c, store.ErrBadCursor)
	}
	return live, kept, nil
}

// auditLive are the live decisions (in the order made) with their ids,
// after the decision with id after.
type auditLive struct {
	ds    []*store.Audited
	ids   []int64
	after int64
}

// auditKept are the tombstones' decisions (in time order), after the
// first skipped.
type auditKept struct {
	ds      []*store.Audited
	skipped int
}

// mergeAudit merges the live decisions with the tombstones', in time
// order, the first limit (0: all), each with the cursor after it.
func mergeAudit(live auditLive, pruned auditKept, limit int) []*store.Audited {
	out := make([]*store.Audited, 0, len(live.ds)+len(pruned.ds))
	last, kept := live.after, pruned.skipped
	i, j := 0, 0
	for (i < len(live.ds) || j < len(pruned.ds)) && (limit <= 0 || len(out) < limit) {
		if j == len(pruned.ds) || i < len(live.ds) && pruned.ds[j].At.After(live.ds[i].At) {
			out, last = append(out, live.ds[i]), live.ids[i]
			i++
		} else {
			out, kept = append(out, pruned.ds[j]), kept+1
			j++
		}
		out[len(out)-1].Cursor = strconv.FormatInt(last, 10) + "." + strconv.Itoa(kept)
	}
	return out
}

// Vacuum implements store.Pruner.
func (s *DB) Vacuum(ctx context.Context) (before, after int64, err error) {
	size := `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`
	steps := []string{`VACUUM`, `PRAGMA wal_checkpoint(TRUNCATE)`}
	if s.postgres() {
		size = `SELECT pg_database_size(current_database())`
		steps = []string{`VACUUM (ANALYZE) runs, calls, event_rows, decisions, notifications, specs, tombstones`}
	}
	if err := s.db.QueryRowContext(ctx, size).Scan(&before); err != nil {
		return 0, 0, fmt.Errorf("vacuum: size: %w", s.Classify(err))
	}
	for _, q := range steps {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return before, 0, fmt.Errorf("vacuum: %w", s.Classify(err))
		}
	}
	if err := s.db.QueryRowContext(ctx, size).Scan(&after); err != nil {
		return before, 0, fmt.Errorf("vacuum: size: %w", s.Classify(err))
	}
	return before, after, nil
}
