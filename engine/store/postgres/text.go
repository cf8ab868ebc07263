package postgres

import (
	"cmp"
	"context"
	"database/sql/driver"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentctl/agentctl/engine/store/sqlstore"
)

// PostgreSQL's text holds neither NUL nor invalid UTF-8, which a model's
// answer, a tool's output or a run's input may contain and SQLite
// stores. The connections agentctl opens escape such a string on its way
// in (sqlstore.EscapeText) and unescape every string on its way out, so
// that both backends store and return any string the same way.

// textConnector opens connections that escape text.
type textConnector struct{ inner driver.Connector }

// Credentials (tokens, browser sessions) live in a schema of their own,
// PrivateSchema, which a role granted SELECT on the public schema's
// tables cannot read (docs/team.md's auditor). Each connection finds them
// on its search_path, after public.
const PrivateSchema = "agentctl_private"

func newTextConnector(dsn string) (driver.Connector, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	// A search_path the user set (search_path=... in the URL) keeps its
	// order; the credentials' schema comes last.
	path := cmp.Or(cfg.RuntimeParams["search_path"], "public")
	cfg.RuntimeParams["search_path"] = path + ", " + PrivateSchema
	return textConnector{stdlib.GetConnector(*cfg)}, nil
}

func (c textConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	pc, ok := conn.(*stdlib.Conn)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("postgres: a connection of type %T, not pgx's", conn)
	}
	return &textConn{pc}, nil
}

func (c textConnector) Driver() driver.Driver { return c.inner.Driver() }

// textConn is a pgx connection whose arguments and results are escaped.
type textConn struct{ *stdlib.Conn }

// CheckNamedValue escapes the strings among a statement's arguments.
func (c *textConn) CheckNamedValue(nv *driver.NamedValue) error {
	switch v := nv.Value.(type) {
	case string:
		nv.Value = sqlstore.EscapeText(v)
	case []string:
		e := make([]string, len(v))
		for i, s := range v {
			e[i] = sqlstore.EscapeText(s)
		}
		nv.Value = e
	case []byte:
	case driver.Valuer:
		dv, err := v.Value()
		if err != nil {
			return fmt.Errorf("argument %d: %w", nv.Ordinal, err)
		}
		if s, ok := dv.(string); ok {
			dv = sqlstore.EscapeText(s)
		}
		nv.Value = dv
	}
	return nil
}

// QueryContext unescapes the strings of the rows it returns.
func (c *textConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.Conn.QueryContext(ctx, q, args)
	if err != nil {
		return nil, err
	}
	return &textRows{rows}, nil
}

// PrepareContext prepares a statement whose rows are unescaped.
func (c *textConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	st, err := c.Conn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if _, ok := st.(interface {
		driver.StmtExecContext
		driver.StmtQueryContext
	}); !ok {
		st.Close()
		return nil, fmt.Errorf("postgres: a statement of type %T, not pgx's", st)
	}
	return &textStmt{st}, nil
}

// Prepare is PrepareContext without a context.
func (c *textConn) Prepare(q string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), q)
}

// textStmt is a prepared statement whose rows are unescaped.
type textStmt struct{ driver.Stmt }

func (s *textStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *textStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	return &textRows{rows}, nil
}

// textRows unescapes the strings of its rows.
type textRows struct{ driver.Rows }

func (r *textRows) Next(dest []driver.Value) error {
	if err := r.Rows.Next(dest); err != nil {
		return err
	}
	for i, v := range dest {
		if s, ok := v.(string); ok {
			dest[i] = sqlstore.UnescapeText(s)
		}
	}
	return nil
}
