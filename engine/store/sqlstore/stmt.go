package sqlstore

import (
	"context"
	"database/sql"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/engine/store/chain"
)

// stmts caches prepared statements by query text: parsing SQL is most of
// the cost of a small query, and a process advancing many runs runs the
// same few dozen queries again and again. A query first seen inside a
// transaction the second time is prepared once that transaction ends
// (the only connection is busy until then): a one-shot command, running
// most queries once, does not parse them twice.
type stmts struct {
	mu   sync.Mutex
	m    map[string]*sql.Stmt
	seen map[string]int
	want []string
}

func (c *stmts) get(q string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[q]
}

func (c *stmts) wanted(q string) {
	if strings.Contains(strings.TrimRight(strings.TrimSpace(q), ";"), ";") {
		return // several statements: not preparable as one
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]int{}
	}
	if c.seen[q]++; c.seen[q] == 2 {
		c.want = append(c.want, q)
	}
}

// prepare prepares what transactions wanted; outside any transaction.
func (c *stmts) prepare(ctx context.Context, db *sql.DB) {
	c.mu.Lock()
	want := c.want
	c.want = nil
	c.mu.Unlock()
	for _, q := range want {
		if c.get(q) != nil {
			continue
		}
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			continue // run unprepared next time too
		}
		c.mu.Lock()
		if c.m == nil {
			c.m = map[string]*sql.Stmt{}
		}
		if c.m[q] == nil {
			c.m[q] = st
		} else {
			st.Close()
		}
		c.mu.Unlock()
	}
}

// lookup returns q prepared, preparing it now; outside any transaction.
func (c *stmts) lookup(ctx context.Context, db *sql.DB, q string) (*sql.Stmt, error) {
	if st := c.get(q); st != nil {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	if prev := c.m[q]; prev != nil {
		st.Close()
		return prev, nil
	}
	c.m[q] = st
	return st, nil
}

func (c *stmts) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}

// txn is a transaction whose queries use the statement cache, with
// placeholders as the dialect writes them.
type txn struct {
	tx *sql.Tx
	s  *DB
	// xid is the transaction's id, when lockRun read it (Dialect.TxID):
	// what a COMMIT whose answer is lost is settled by.
	xid sql.NullString
	// chain are the audit records appended when it commits (chain.go).
	chain []chain.Record
}

func (t *txn) cached(q string) *sql.Stmt {
	if !t.s.d.Cache {
		return nil
	}
	if st := t.s.stmts.get(q); st != nil {
		return st
	}
	t.s.stmts.wanted(q)
	return nil
}

func (t *txn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := t.cached(q); st != nil {
		return t.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, t.s.rebind(q), args...)
}

func (t *txn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := t.cached(q); st != nil {
		return t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, t.s.rebind(q), args...)
}

func (t *txn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := t.cached(q); st != nil {
		return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, t.s.rebind(q), args...)
}

// query runs a read outside any transaction, through the cache.
func (s *DB) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if !s.d.Cache {
		return s.db.QueryContext(ctx, s.rebind(q), args...)
	}
	st, err := s.stmts.lookup(ctx, s.db, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// exec runs a write outside any transaction, through the cache.
func (s *DB) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if !s.d.Cache {
		res, err := s.db.ExecContext(ctx, s.rebind(q), args...)
		if err != nil && s.d.CommitUnknown != nil && s.d.CommitUnknown(err) {
			return nil, &OutcomeUnknownError{Err: err} // a statement is its own transaction
		}
		return res, err
	}
	st, err := s.stmts.lookup(ctx, s.db, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// queryRow is query for one row.
func (s *DB) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	if !s.d.Cache {
		return s.db.QueryRowContext(ctx, s.rebind(q), args...)
	}
	st, err := s.stmts.lookup(ctx, s.db, q)
	if err != nil {
		return s.db.QueryRowContext(ctx, q, args...) // reports the error
	}
	return st.QueryRowContext(ctx, args...)
}

// reader runs reads through the cache, for helpers that take a querier.
type reader struct{ s *DB }

func (r reader) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return r.s.query(ctx, q, args...)
}
