package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/engine/store"
)

// treeOf selects the ids of the runs of the tree that run ? belongs to
// (a root stores no root_id: it is its own root).
const treeOf = `SELECT t.id FROM runs t, (SELECT COALESCE(root_id, id) AS root FROM runs WHERE id = ?) x
	WHERE t.id = x.root OR t.root_id = x.root`

// ReadTree implements store.Store. Its queries read each on its own: a
// read transaction around them, measured, made a decision over HTTP
// slower by a sixth (its BEGIN and ROLLBACK cost more than the WAL read
// locks they save).
func (s *DB) ReadTree(ctx context.Context, id string, decisions bool) (*store.TreeRead, error) {
	out, err := readTree(ctx, reader{s}, id, decisions)
	if err != nil {
		return nil, fmt.Errorf("tree of run %s: %w", id, err)
	}
	if len(out.Runs) == 0 {
		return nil, &store.NotFoundError{What: "no run " + id}
	}
	return out, nil
}

// readTree is ReadTree's queries: the runs, the root first, then every
// call, and the decisions if asked, each in one query.
func readTree(ctx context.Context, q querier, id string, decisions bool) (*store.TreeRead, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+runCols+` FROM runs WHERE id IN (`+treeOf+`) ORDER BY parent_id IS NULL DESC, id`, id)
	if err != nil {
		return nil, err
	}
	t := &store.TreeRead{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		t.Runs = append(t.Runs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(t.Runs) == 0 {
		return t, err
	}
	in, ids := runIn(t.Runs)
	if t.Calls, err = queryCalls(ctx, q, `SELECT `+callCols+` FROM calls WHERE run_id `+in+` ORDER BY run_id, seq`, ids...); err != nil {
		return nil, err
	}
	if decisions {
		if t.Decisions, err = queryDecisions(ctx, q, `WHERE run_id `+in+` ORDER BY id`, ids...); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// runIn is the condition on a run_id column that selects the runs, and
// its arguments: "= ?" for one run (the common case: one statement to
// prepare), "IN (?, ...)" for a tree.
func runIn(runs []*store.Run) (string, []any) {
	ids := make([]any, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	if len(ids) == 1 {
		return "= ?", ids
	}
	return "IN (?" + strings.Repeat(", ?", len(ids)-1) + ")", ids
}
