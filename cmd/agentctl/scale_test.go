//go:build scale

// make scale: per-command latencies on databases of millions of runs,
// against the same at 100k, to show that no command's cost grows with
// history. Built only with -tags scale: make test and make bench never
// run it.

package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/backend"
)

// scaleSuspended is how many seeded runs, at every size, are suspended
// waiting for an approval: the same number at each size, so that the
// sizes differ in history only.
const scaleSuspended = 1000

// scaleSizes reads a comma-separated list of run counts from the
// environment variable name (to try make scale small), else def.
func scaleSizes(b *testing.B, name string, def ...int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2*scaleSuspended {
			b.Fatalf("%s=%q: want run counts of at least %d", name, v, 2*scaleSuspended)
		}
		out = append(out, n)
	}
	return out
}

// scaleReps is how many times each command is timed at each size
// ($SCALE_REPS, default 41).
func scaleReps(b *testing.B) int {
	n, err := strconv.Atoi(cmp.Or(os.Getenv("SCALE_REPS"), "41"))
	if err != nil || n < 1 || n > len(pendingIDs(scaleSuspended)) {
		b.Fatalf("SCALE_REPS=%q: want 1 to %d", os.Getenv("SCALE_REPS"), len(pendingIDs(scaleSuspended)))
	}
	return n
}

// scaleDB is one seeded database: its --db value, how many runs it holds,
// the suspended runs that approve takes, in order, how long seeding took
// and its size on disk after.
type scaleDB struct {
	dsn     string
	runs    int
	pending []string
	seed    time.Duration
	bytes   int64
}

// BenchmarkScale seeds, for SQLite, databases of 100k and 10M runs
// ($SCALE_SQLITE), and for PostgreSQL of 100k and 1M ($SCALE_PG), with
// bulk SQL, then times cold agentctl run (to suspension), approve (to
// completion) and list --status suspended on each, alternately, and
// reports the medians, the ratios to the smallest size, the seeding time
// and the bytes on disk per million runs. Run with -benchtime 1x.
func BenchmarkScale(b *testing.B) {
	b.Cleanup(stopPG)
	b.Cleanup(func() { // the binaries built for it
		if dir, err := binaries(); err == nil {
			os.RemoveAll(dir)
		}
	})
	b.Run("sqlite", func(b *testing.B) {
		sizes := scaleSizes(b, "SCALE_SQLITE", 100_000, 10_000_000)
		scaleBench(b, sizes, func(n int) *scaleDB { return seedSQLite(b, n) })
	})
	b.Run("postgres", func(b *testing.B) {
		sizes := scaleSizes(b, "SCALE_PG", 100_000, 1_000_000)
		scaleBench(b, sizes, func(n int) *scaleDB { return seedPG(b, n) })
	})
}

// scaleBench seeds a database of each size, times the three commands on
// each in turn, repeatedly, and reports per size (sub-benchmark
// runs=N) the medians in ms, their ratios to the first size's, the
// seeding time and bytes per million runs.
func scaleBench(b *testing.B, sizes []int, seed func(int) *scaleDB) {
	dir, err := binaries()
	if err != nil {
		b.Fatal(err)
	}
	agentctl := filepath.Join(dir, "agentctl")
	specFile := filepath.Join(b.TempDir(), "perf.yaml")
	if err := os.WriteFile(specFile, []byte(perfSpec), 0o644); err != nil {
		b.Fatal(err)
	}
	reps := scaleReps(b)
	dbs := make([]*scaleDB, len(sizes))
	for i, n := range sizes {
		dbs[i] = seed(n)
		b.Logf("%d runs: seeded in %s, %d bytes", n, dbs[i].seed.Round(time.Second), dbs[i].bytes)
	}
	cmds := []string{"run", "approve", "list"}
	times := make([]map[string][]time.Duration, len(dbs))
	for i := range times {
		times[i] = map[string][]time.Duration{}
	}
	for r := 0; r < reps; r++ {
		for _, c := range cmds {
			for j := range dbs {
				i := j
				if r%2 == 1 { // each size goes first in every other round
					i = len(dbs) - 1 - j
				}
				d := dbs[i]
				var t time.Duration
				switch c {
				case "run":
					t = timeCmd(b, 3, agentctl, "--db", d.dsn, "run", "oncall", "-f", specFile, "--input", "nginx is down")
				case "approve":
					t = timeCmd(b, 0, agentctl, "--db", d.dsn, "approve", d.pending[r])
				case "list":
					t = timeCmd(b, 0, agentctl, "--db", d.dsn, "list", "--status", "suspended")
				}
				times[i][c] = append(times[i][c], t)
			}
		}
	}
	for i, d := range dbs {
		b.Run(fmt.Sprintf("runs=%d", d.runs), func(b *testing.B) {
			for _, c := range cmds {
				m := median(times[i][c])
				b.ReportMetric(float64(m.Microseconds())/1000, c+"-ms")
				b.ReportMetric(float64(m)/float64(median(times[0][c])), c+"-ratio")
			}
			b.ReportMetric(d.seed.Seconds(), "seed-s")
			b.ReportMetric(float64(reps), "rounds")
			b.ReportMetric(float64(d.bytes)/float64(d.runs)*1e6, "bytes/Mruns")
		})
	}
}

// scaleTemplates makes, through the engine, the runs the seeding copies:
// one of perfSpec completed (run, then approved) and one suspended on its
// approval. It returns their ids.
func scaleTemplates(b *testing.B, dsn string) (completed, suspended string) {
	ctx := context.Background()
	db, err := openDB(ctx, dsn, backend.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	e, g := engine.New(db, engine.Config{}), perfGraph()
	var ids [2]string
	for i := range ids {
		v, err := e.Start(ctx, g, engine.StartOptions{Agent: "oncall", Input: "nginx is down"})
		if err == nil && v.Status != store.Suspended {
			err = fmt.Errorf("template run: %s", v.Status)
		}
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = v.RunID
	}
	v, err := e.Decide(ctx, engine.Decision{RunID: ids[0], Action: store.Approve, OSUser: "scale"})
	if err == nil && v.Status != store.Completed {
		err = fmt.Errorf("template approve: %s", v.Status)
	}
	if err != nil {
		b.Fatal(err)
	}
	return ids[0], ids[1]
}

// dialect is what differs between SQLite and PostgreSQL in the seeding.
type dialect struct {
	tables  string // a query listing the tables
	series  func(lo, hi int) string
	newID   string // the new run's id from n.i
	ordered bool   // whether the copy needs LATERAL to keep template order
}

var (
	sqliteDialect = dialect{
		tables: `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`,
		series: func(lo, hi int) string {
			return fmt.Sprintf("WITH RECURSIVE n(i) AS (SELECT %d UNION ALL SELECT i + 1 FROM n WHERE i < %d) ", lo, hi)
		},
		newID: `printf('00F%023d', n.i)`,
	}
	pgDialect = dialect{
		tables: `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
		series: func(lo, hi int) string {
			return fmt.Sprintf("WITH n(i) AS (SELECT generate_series(%d, %d)) ", lo, hi)
		},
		newID:   `'00F' || lpad(n.i::text, 23, '0')`,
		ordered: true,
	}
)

// seedRuns copies the template runs' rows (a run, its calls, events and
// decisions: every table with a run_id, and runs) total times with new
// ids 00F..., ordered before any real run's, every total/scaleSuspended-th
// one the suspended template's and the rest the completed one's, in
// batches, each table's rows in id order. conn is one connection: the
// templates go into temporary tables.
func seedRuns(ctx context.Context, conn *sql.Conn, d dialect, total int, completed, suspended string, logf func(string, ...any)) error {
	names, err := queryStrings(ctx, conn, d.tables)
	if err != nil {
		return err
	}
	names = append([]string{"runs"}, slices.DeleteFunc(names, func(s string) bool { return s == "runs" })...)
	var stmts []string
	for _, name := range names {
		q, err := copyQuery(ctx, conn, d, name, total, completed, suspended, logf)
		if err != nil {
			return err
		}
		if q != "" {
			stmts = append(stmts, q)
		}
	}
	const batch = 500_000
	for lo := 1; lo <= total; lo += batch {
		for _, q := range stmts {
			if _, err := conn.ExecContext(ctx, d.series(lo, min(lo+batch-1, total))+q); err != nil {
				return fmt.Errorf("seed: runs %d-: %w", lo, err)
			}
		}
	}
	return nil
}

// copyQuery puts the template runs' rows of table name in a temporary
// table and returns the INSERT that copies them for each n.i of a series
// the caller prepends: the run's id (runs.id, run_id) made from n.i (a
// root run's root_id stays NULL), an identity column left to the insert,
// the runs' times spread a second apart back from the templates'. It
// returns "" for a table without runs' rows.
func copyQuery(ctx context.Context, conn *sql.Conn, d dialect, name string, total int, completed, suspended string, logf func(string, ...any)) (string, error) {
	cols, err := columns(ctx, conn, name)
	if err != nil {
		return "", err
	}
	key := "run_id"
	if name == "runs" {
		key = "id"
	} else if !slices.Contains(cols, "run_id") {
		return "", nil
	}
	order := ""
	if slices.Contains(cols, "id") && name != "runs" {
		order = " ORDER BY id"
	} else if slices.Contains(cols, "call_id") {
		order = " ORDER BY seq"
	}
	tmpl := "tmpl_" + name
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("CREATE TEMP TABLE %s AS SELECT * FROM %s WHERE %s IN ('%s', '%s')%s",
		tmpl, name, key, completed, suspended, order)); err != nil {
		return "", fmt.Errorf("seed: template of %s: %w", name, err)
	}
	var nc, ns int
	count := fmt.Sprintf("SELECT (SELECT count(*) FROM %[1]s WHERE %[2]s = '%[3]s'), (SELECT count(*) FROM %[1]s WHERE %[2]s = '%[4]s')",
		tmpl, key, completed, suspended)
	if err := conn.QueryRowContext(ctx, count).Scan(&nc, &ns); err != nil {
		return "", fmt.Errorf("seed: template of %s: %w", name, err)
	}
	if nc+ns == 0 {
		return "", nil
	}
	logf("%s: %d rows per completed run, %d per suspended run", name, nc, ns)
	var into, sel []string
	for _, c := range cols {
		switch {
		case c == key:
			sel = append(sel, d.newID)
		case c == "id": // an identity: numbered by the insert
			continue
		case name == "runs" && (c == "created_at" || c == "updated_at"):
			sel = append(sel, fmt.Sprintf("t.%s - (%d - n.i) * 1000", c, total))
		default:
			sel = append(sel, "t."+c)
		}
		into = append(into, c)
	}
	pick := fmt.Sprintf("CASE WHEN n.i %% %d = 0 THEN '%s' ELSE '%s' END", total/scaleSuspended, suspended, completed)
	from := fmt.Sprintf("FROM n CROSS JOIN %s t WHERE t.%s = %s", tmpl, key, pick)
	if d.ordered {
		from = fmt.Sprintf("FROM n CROSS JOIN LATERAL (SELECT * FROM %s t WHERE t.%s = %s%s) t", tmpl, key, pick, order)
	}
	return fmt.Sprintf("INSERT INTO %s (%s) SELECT %s %s", name, strings.Join(into, ", "), strings.Join(sel, ", "), from), nil
}

// queryStrings returns the first column of a query's rows.
func queryStrings(ctx context.Context, conn *sql.Conn, q string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("seed: %s: %w", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("seed: %s: %w", q, err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// columns names a table's columns.
func columns(ctx context.Context, conn *sql.Conn, table string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, "SELECT * FROM "+table+" LIMIT 0")
	if err != nil {
		return nil, fmt.Errorf("seed: columns of %s: %w", table, err)
	}
	defer rows.Close()
	return rows.Columns()
}

// pendingIDs are the ids of reps seeded suspended runs, spread over the
// database's history, for approve.
func pendingIDs(total int) []string {
	every := total / scaleSuspended
	var ids []string
	for k := scaleSuspended; k >= 1; k -= 7 {
		ids = append(ids, fmt.Sprintf("00F%023d", k*every))
	}
	return ids
}

// seedSQLite makes a SQLite database of total runs: the schema and the
// templates through the engine, the rest with bulk SQL, without a
// journal and without syncing, then back in WAL mode as the store leaves
// it. Its size is the file's.
func seedSQLite(b *testing.B, total int) *scaleDB {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), fmt.Sprintf("scale-%d.db", total))
	start := time.Now()
	completed, suspended := scaleTemplates(b, path)
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	conn, err := raw.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	for _, p := range []string{"journal_mode = OFF", "synchronous = OFF", "cache_size = -1048576", "temp_store = MEMORY"} {
		if _, err := conn.ExecContext(ctx, "PRAGMA "+p); err != nil {
			b.Fatalf("PRAGMA %s: %v", p, err)
		}
	}
	if err := seedRuns(ctx, conn, sqliteDialect, total, completed, suspended, b.Logf); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA journal_mode = WAL"); err != nil {
		b.Fatal(err)
	}
	d := &scaleDB{dsn: path, runs: total, pending: pendingIDs(total), seed: time.Since(start)}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	d.bytes = fi.Size()
	return d
}

// seedPG makes a PostgreSQL database of total runs on the benchmarks'
// throwaway server (fsync off): the schema and the templates through the
// engine, the rest with bulk SQL with triggers and foreign keys off
// (session_replication_role), then VACUUM (ANALYZE), as autovacuum would
// do in time. Its size is pg_database_size.
func seedPG(b *testing.B, total int) *scaleDB {
	ctx := context.Background()
	dsn, err := newPGDatabase(fmt.Sprintf("scale%d", total))
	if err != nil {
		if os.Getenv("AGENTCTL_REQUIRE_POSTGRES") == "1" {
			b.Fatal("postgres:", err)
		}
		b.Skip("postgres:", err)
	}
	start := time.Now()
	completed, suspended := scaleTemplates(b, dsn)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	conn, err := raw.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{"SET session_replication_role = replica", "SET maintenance_work_mem = '512MB'",
		"ALTER SYSTEM SET max_wal_size = '8GB'", "SELECT pg_reload_conf()"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	if err := seedRuns(ctx, conn, pgDialect, total, completed, suspended, b.Logf); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "VACUUM (ANALYZE)"); err != nil {
		b.Fatal(err)
	}
	d := &scaleDB{dsn: dsn, runs: total, pending: pendingIDs(total), seed: time.Since(start)}
	if err := conn.QueryRowContext(ctx, "SELECT pg_database_size(current_database())").Scan(&d.bytes); err != nil {
		b.Fatal(err)
	}
	return d
}
