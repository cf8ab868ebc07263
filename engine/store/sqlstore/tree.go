package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agentctl/agentctl/engine/store"
)

// treeOf selects the ids of the runs of the tree that run ? belongs to
// (a root stores no root_id: it is its own root).
const treeOf = `SELECT t.id FROM runs t, (SELECT COALESCE(root_id, id) AS root FROM runs WHERE id = ?) x
	WHERE t.id = x.root OR t.root_id = x.root`

// ReadTree implements store.Store: on SQLite, in one read transaction
// (one snapshot, the WAL's read lock taken once); on PostgreSQL, each
// query on its own, as one round trip a query is cheaper than three more.
func (s *DB) ReadTree(ctx context.Context, id string, decisions bool) (*store.TreeRead, error) {
	var out *store.TreeRead
	err := s.read(ctx, func(q querier) error {
		var err error
		out, err = readTree(ctx, q, id, decisions)
		return err
	})
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
	if t.Calls, err = queryCalls(ctx, q, `SELECT `+callCols+` FROM calls WHERE run_id IN (`+treeOf+`) ORDER BY run_id, seq`, id); err != nil {
		return nil, err
	}
	if decisions {
		if t.Decisions, err = queryDecisions(ctx, q, `WHERE run_id IN (`+treeOf+`) ORDER BY id`, id); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// read runs f's queries in one read transaction where the dialect says
// it pays (Dialect.ReadTx), else each on its own.
func (s *DB) read(ctx context.Context, f func(querier) error) error {
	if !s.d.ReadTx {
		return f(reader{s})
	}
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	if s.d.Cache {
		defer s.stmts.prepare(context.WithoutCancel(ctx), s.db)
	}
	defer tx.Rollback() // a read: nothing to commit
	return f(&txn{tx: tx, s: s})
}
