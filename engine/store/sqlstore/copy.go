package sqlstore

import (
	"context"
	"fmt"
	"strings"
)

// Copied is what Copy did to one table.
type Copied struct {
	Table   string `json:"table"`
	Source  int    `json:"source"`  // rows in the source
	Copied  int    `json:"copied"`  // rows inserted
	Present int    `json:"present"` // rows the target already had
	Target  int    `json:"target"`  // rows in the target afterwards
}

// tables are what Copy copies, parents first, with their keys.
var tables = []struct{ name, cols, key string }{
	{"specs", "hash, body", "hash"},
	{"runs", runCols + ", owner, lease_expires, ready", "id"},
	{"calls", callCols, "run_id, call_id"},
	{"decisions", "id, run_id, call_id, action, by_name, os_user, reason, at, args_before, args_after, data", "id"},
	{"events", "id, run_id, type, data, at", "id"},
}

// Copy copies every run, call, decision and event (and spec snapshot)
// from one database to another, keeping ids, and verifies the counts.
// Rows the target already has (by key) are left alone, so Copy is safe to
// run again.
func Copy(ctx context.Context, from, to *DB) ([]Copied, error) {
	var out []Copied
	for _, t := range tables {
		c := Copied{Table: t.name}
		rows, err := from.db.QueryContext(ctx, `SELECT `+t.cols+` FROM `+t.name+` ORDER BY `+t.key)
		if err != nil {
			return out, fmt.Errorf("read %s: %w", t.name, err)
		}
		n := len(strings.Split(t.cols, ","))
		insert := (`INSERT INTO ` + t.name + `(` + t.cols + `) VALUES (?` + strings.Repeat(", ?", n-1) + `) ON CONFLICT (` + t.key + `) DO NOTHING`)
		var batch [][]any
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			err := to.tx(ctx, func(tx *txn) error {
				for _, vals := range batch {
					res, err := tx.ExecContext(ctx, insert, vals...)
					if err != nil {
						return err
					}
					k, _ := res.RowsAffected()
					c.Copied += int(k)
				}
				return nil
			})
			batch = batch[:0]
			return err
		}
		for rows.Next() {
			vals := make([]any, n)
			ptrs := make([]any, n)
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return out, fmt.Errorf("read %s: %w", t.name, err)
			}
			c.Source++
			batch = append(batch, vals)
			if len(batch) == 500 {
				if err := flush(); err != nil {
					rows.Close()
					return out, fmt.Errorf("write %s: %w", t.name, err)
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return out, fmt.Errorf("read %s: %w", t.name, err)
		}
		if err := flush(); err != nil {
			return out, fmt.Errorf("write %s: %w", t.name, err)
		}
		c.Present = c.Source - c.Copied
		if err := to.db.QueryRowContext(ctx, `SELECT count(*) FROM `+t.name).Scan(&c.Target); err != nil {
			return out, err
		}
		out = append(out, c)
		if c.Target < c.Source {
			return out, fmt.Errorf("verify %s: the target has %d rows, the source %d", t.name, c.Target, c.Source)
		}
	}
	if to.d.Dollar { // identity columns: continue after the copied ids
		for _, t := range []string{"decisions", "events"} {
			if _, err := to.db.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence('`+t+`', 'id'), COALESCE((SELECT max(id) FROM `+t+`), 0) + 1, false)`); err != nil {
				return out, fmt.Errorf("advance the ids of %s: %w", t, err)
			}
		}
	}
	return out, nil
}
