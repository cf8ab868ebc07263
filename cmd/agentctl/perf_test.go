package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/backend"
	"github.com/agentctl/agentctl/engine/store/sqlite"
	"github.com/agentctl/agentctl/spec"
)

// perfSpec is the run-to-suspension benchmarks' agent: a model turn that
// calls a tool (executed), a second that calls one needing approval.
const perfSpec = `
version: 1
models:
  script:
    provider: scripted
    turns:
      - toolCalls: [{tool: check, args: {service: nginx}}]
      - toolCalls: [{tool: restart, args: {service: nginx}}]
      - text: done
tools:
  check:
    input: {type: object, properties: {service: {type: string}}, required: [service]}
    output: "${{ input.service }} is down"
  restart:
    input: {type: object, properties: {service: {type: string}}, required: [service]}
    output: "restarted ${{ input.service }}"
    requireApproval: true
agents:
  oncall: {model: script, tools: [restart, check], instructions: You are on call.}
`

// perfGraph compiles perfSpec, a constant: failing is a bug here.
func perfGraph() *engine.Graph {
	s, err := spec.Load([]spec.Source{{Name: "perf.yaml", Data: []byte(perfSpec)}})
	if err != nil {
		panic(err)
	}
	g, err := engine.Compile(s, nil, nil)
	if err != nil {
		panic(err)
	}
	return g
}

// recorder is a Store that notes the size of every write transaction:
// the storage floor replays them without the engine.
type recorder struct {
	store.Store
	mu  sync.Mutex
	txs []int
}

func (r *recorder) note(n int) {
	r.mu.Lock()
	r.txs = append(r.txs, n)
	r.mu.Unlock()
}

func eventBytes(evs []store.Event) int {
	n := 0
	for _, e := range evs {
		n += len(e.Data) + len(e.Type) + len(e.RunID)
	}
	return n
}

func runBytes(r *store.Run) int {
	return len(r.State) + len(r.Input) + len(r.Output) + len(r.ID) + len(r.Agent)
}

func (r *recorder) CreateRun(ctx context.Context, run *store.Run, spec []byte, l store.Lease) error {
	r.note(runBytes(run))
	return r.Store.CreateRun(ctx, run, spec, l)
}

func (r *recorder) Checkpoint(ctx context.Context, l store.Lease, run *store.Run, calls []*store.Call, ev ...store.Event) error {
	n := runBytes(run) + eventBytes(ev)
	for _, c := range calls {
		n += len(c.Args) + len(c.Result) + len(c.ID) + len(c.Tool)
	}
	r.note(n)
	return r.Store.Checkpoint(ctx, l, run, calls, ev...)
}

func (r *recorder) MoveCall(ctx context.Context, l store.Lease, m store.Move, ev ...store.Event) error {
	r.note(len(m.Result) + len(m.Payload) + eventBytes(ev))
	return r.Store.MoveCall(ctx, l, m, ev...)
}

func (r *recorder) Suspend(ctx context.Context, l store.Lease, run *store.Run, ev ...store.Event) error {
	r.note(runBytes(run) + eventBytes(ev))
	return r.Store.Suspend(ctx, l, run, ev...)
}

func (r *recorder) Settle(ctx context.Context, l store.Lease, m store.Move, ev ...store.Event) (bool, error) {
	r.note(len(m.Result) + eventBytes(ev))
	return r.Store.Settle(ctx, l, m, ev...)
}

func (r *recorder) Apply(ctx context.Context, l store.Lease, w store.Writes, ev ...store.Event) error {
	n := eventBytes(ev)
	for _, c := range w.Create {
		n += runBytes(c.Run)
	}
	if w.Run != nil {
		n += runBytes(w.Run)
	}
	for _, c := range w.Calls {
		n += len(c.Args) + len(c.Result) + len(c.ID) + len(c.Tool)
	}
	for _, m := range w.Moves {
		n += len(m.Result) + len(m.Payload)
	}
	r.note(n)
	return r.Store.Apply(ctx, l, w, ev...)
}

func (r *recorder) Decide(ctx context.Context, ds []*store.Decision, l store.Lease, ev ...store.Event) (bool, error) {
	r.note(eventBytes(ev))
	return r.Store.Decide(ctx, ds, l, ev...)
}

func (r *recorder) Claim(ctx context.Context, l store.Lease, id string, from ...store.Status) error {
	r.note(len(id))
	return r.Store.Claim(ctx, l, id, from...)
}

func (r *recorder) Release(ctx context.Context, l store.Lease, id string) error {
	r.note(len(id))
	return r.Store.Release(ctx, l, id)
}

// floorDB opens a database the way the store does, with one table the
// floor writes to.
func floorDB(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)&_pragma=synchronous(normal)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS floor (id INTEGER PRIMARY KEY, body BLOB NOT NULL)`); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// floorRun commits one transaction per size, each inserting that many
// bytes: the storage cost of a run without the engine.
func floorRun(db *sql.DB, sizes []int, body []byte) error {
	for _, n := range sizes {
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO floor (body) VALUES (?)`, body[:min(n, len(body))]); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// txProfile runs perfSpec once through a recorder and returns the sizes
// of its write transactions to suspension, and how many transactions its
// approval then commits to completion.
func txProfile() ([]int, int, error) {
	dir, err := os.MkdirTemp("", "agentctl-profile")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(context.Background(), filepath.Join(dir, "profile.db"), sqlite.Options{})
	if err != nil {
		return nil, 0, err
	}
	defer db.Close()
	rec := &recorder{Store: db}
	e := engine.New(rec, engine.Config{})
	v, err := e.Start(context.Background(), perfGraph(), engine.StartOptions{Agent: "oncall", Input: "nginx is down"})
	if err == nil && v.Status != store.Suspended {
		err = fmt.Errorf("profile run: %s", v.Status)
	}
	if err != nil {
		return nil, 0, err
	}
	run := rec.txs
	rec.txs = nil
	v, err = e.Decide(context.Background(), engine.Decision{RunID: v.RunID, Action: store.Approve, OSUser: "bench"})
	if err == nil && v.Status != store.Completed {
		err = fmt.Errorf("profile approve: %s", v.Status)
	}
	return run, len(rec.txs), err
}

// BenchmarkRunToSuspension times, in process, a run from Start to its
// suspension on an approval (two model turns, one tool executed), and the
// storage floor: the same number of committed transactions of the same
// sizes, without the engine. The two alternate, each on its own database.
func BenchmarkRunToSuspension(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "engine.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	fdb, err := floorDB(filepath.Join(dir, "floor.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer fdb.Close()
	sizes, approveTxs, err := txProfile()
	if err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 64<<10)
	e := engine.New(db, engine.Config{})
	g := perfGraph()
	var te, tf time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		v, err := e.Start(ctx, g, engine.StartOptions{Agent: "oncall", Input: "nginx is down"})
		if err != nil || v.Status != store.Suspended {
			b.Fatalf("%v %v", v, err)
		}
		t1 := time.Now()
		if err := floorRun(fdb, sizes, body); err != nil {
			b.Fatal(err)
		}
		te, tf = te+t1.Sub(t0), tf+time.Since(t1)
	}
	b.StopTimer()
	b.ReportMetric(float64(te.Microseconds())/float64(b.N), "run-us")
	b.ReportMetric(float64(tf.Microseconds())/float64(b.N), "floor-us")
	b.ReportMetric(float64(te)/float64(tf), "ratio")
	b.ReportMetric(float64(len(sizes)), "txs/run")
	b.ReportMetric(float64(approveTxs), "txs/approve")
}

// BenchmarkThroughput runs perfSpec to suspension as fast as it goes from
// 1, 4 and 8 processes sharing a database, on SQLite and on PostgreSQL,
// and, from one process, the SQLite storage floor; it reports runs per
// second for each.
func BenchmarkThroughput(b *testing.B) {
	b.Cleanup(stopPG)
	for _, kind := range []string{"sqlite", "postgres"} {
		for _, procs := range []int{1, 4, 8} {
			b.Run(fmt.Sprintf("%s/procs=%d", kind, procs), func(b *testing.B) {
				const perProc = 200
				var path string
				if kind == "postgres" {
					dsn, err := newPGDatabase(fmt.Sprintf("throughput%d", procs))
					if err != nil {
						b.Skip("postgres:", err)
					}
					path = dsn
				} else {
					path = filepath.Join(b.TempDir(), "t.db")
				}
				db, err := openDB(context.Background(), path, backend.Options{})
				if err != nil {
					b.Fatal(err)
				}
				db.Close()
				var rate, floor float64
				for i := 0; i < b.N; i++ {
					rate += benchChildren(b, "runs", path, procs, perProc)
					if procs == 1 && kind == "sqlite" {
						floor += benchChildren(b, "floor", filepath.Join(b.TempDir(), "f.db"), 1, perProc)
					}
				}
				b.ReportMetric(rate/float64(b.N), "runs/s")
				if floor > 0 {
					b.ReportMetric(floor/float64(b.N), "floor-runs/s")
					b.ReportMetric(rate/floor, "ratio")
				}
			})
		}
	}
}

// benchChildren starts procs bench-child processes doing n runs each
// (mode runs) or n floor runs (mode floor), and returns runs per second
// over the span from the first start to the last end.
func benchChildren(b *testing.B, mode, path string, procs, n int) float64 {
	b.Helper()
	cmds := make([]*exec.Cmd, procs)
	outs := make([]strings.Builder, procs)
	for i := range cmds {
		cmds[i] = exec.Command("bench-child", mode, path, strconv.Itoa(n))
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], os.Stderr
		if err := cmds[i].Start(); err != nil {
			b.Fatal(err)
		}
	}
	var first, last int64
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			b.Fatalf("bench-child: %v", err)
		}
		var start, end int64
		if _, err := fmt.Sscan(outs[i].String(), &start, &end); err != nil {
			b.Fatalf("bench-child output %q: %v", outs[i].String(), err)
		}
		if first == 0 || start < first {
			first = start
		}
		last = max(last, end)
	}
	return float64(procs*n) / time.Duration(last-first).Seconds()
}

// benchChild is the bench-child command: MODE PATH N. It prepares, then
// does N runs to suspension (runs) or N floor runs (floor) and prints the
// wall-clock start and end of that loop in Unix nanoseconds.
func benchChild() int {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: bench-child runs|floor PATH N")
		return 2
	}
	n, _ := strconv.Atoi(os.Args[3])
	ctx := context.Background()
	var loop func() error
	switch os.Args[1] {
	case "runs":
		db, err := openDB(ctx, os.Args[2], backend.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer db.Close()
		e, g := engine.New(db, engine.Config{}), perfGraph()
		loop = func() error {
			v, err := e.Start(ctx, g, engine.StartOptions{Agent: "oncall", Input: "nginx is down"})
			if err == nil && v.Status != store.Suspended {
				err = fmt.Errorf("run %s", v.Status)
			}
			return err
		}
	case "floor":
		sizes, _, err := txProfile()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fdb, err := floorDB(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer fdb.Close()
		body := make([]byte, 64<<10)
		loop = func() error { return floorRun(fdb, sizes, body) }
	}
	start := time.Now()
	for range n {
		if err := loop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Println(start.UnixNano(), time.Now().UnixNano())
	return 0
}

// BenchmarkBytesPerSuspendedRun: the database's growth per suspended run,
// over 2,000 runs of perfSpec.
func BenchmarkBytesPerSuspendedRun(b *testing.B) {
	const n = 2000
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		path := filepath.Join(b.TempDir(), "size.db")
		db, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		e, g := engine.New(db, engine.Config{}), perfGraph()
		if _, err := e.Start(ctx, g, engine.StartOptions{Agent: "oncall", Input: "nginx is down"}); err != nil {
			b.Fatal(err)
		}
		db.Close()
		before := dbBytes(b, path)
		db, err = sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		e = engine.New(db, engine.Config{})
		for range n {
			if _, err := e.Start(ctx, g, engine.StartOptions{Agent: "oncall", Input: "nginx is down"}); err != nil {
				b.Fatal(err)
			}
		}
		db.Close()
		b.ReportMetric(float64(dbBytes(b, path)-before)/n, "bytes/run")
	}
}

// dbBytes is the size of a closed database (its WAL checkpointed).
func dbBytes(b *testing.B, path string) int64 {
	b.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := raw.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		b.Fatal(err)
	}
	raw.Close()
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// bigDB is the 1M-run database, kept in the temporary directory between
// benchmark runs (about 700 MB, a quarter minute to make).
var bigDB = sync.OnceValues(func() (string, error) {
	path := filepath.Join(os.TempDir(), "agentctl-bench-1M-v1.db")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp := path + ".making"
	for _, f := range []string{tmp, tmp + "-wal", tmp + "-shm"} {
		os.Remove(f)
	}
	if err := makeBigDB(tmp, 1_000_000, 1_000); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
})

// makeBigDB makes a database of total runs, suspended of them suspended
// (each with its pending call), the rest completed, in time order.
func makeBigDB(path string, total, suspended int) error {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return err
	}
	e, g := engine.New(db, engine.Config{}), perfGraph()
	v, err := e.Start(ctx, g, engine.StartOptions{Agent: "oncall", Input: "nginx is down"})
	db.Close()
	if err != nil {
		return err
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer raw.Close()
	// Every every-th run is suspended, copied from the real one.
	every := total / suspended
	_, err = raw.Exec(`
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO runs (id, agent, status, input, output, error, spec_hash, step, state, root_id, created_at, updated_at)
		SELECT printf('00F%023d', i), agent, CASE WHEN i % ? = 0 THEN 'suspended' ELSE 'completed' END,
			input, '', '', spec_hash, step, state, printf('00F%023d', i), created_at, updated_at
		FROM n, (SELECT * FROM runs WHERE id = ?);
		INSERT INTO calls (run_id, call_id, seq, step, tool, args, status, kind, result, gate, created_at, updated_at)
		SELECT r.id, c.call_id, c.seq, c.step, c.tool, c.args, CASE WHEN r.status = 'suspended' THEN c.status ELSE 'succeeded' END,
			c.kind, c.result, c.gate, c.created_at, c.updated_at
		FROM runs r, (SELECT * FROM calls WHERE run_id = ?) c WHERE r.id LIKE '00F%';`, total-1, every, v.RunID, v.RunID)
	if err != nil {
		return err
	}
	_, err = raw.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	return err
}

// BenchmarkListSuspended times what agentctl list --status suspended
// does (the newest 50 suspended root runs with what each waits for)
// among 1M runs, against the bare indexed SQL it needs, alternately.
func BenchmarkListSuspended(b *testing.B) {
	path, err := bigDB()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	raw, err := floorDB(path)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	e := engine.New(db, engine.Config{})
	const bare = `SELECT r.id, r.agent, r.status, r.input, r.created_at, r.updated_at, c.call_id, c.tool, c.args, c.kind
		FROM (SELECT * FROM runs WHERE status = 'suspended' AND parent_id IS NULL ORDER BY id DESC LIMIT 50) r
		LEFT JOIN calls c ON c.run_id = r.id AND c.status = 'pending'`
	var tl, tb time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		runs, err := e.List(ctx, store.Filter{Status: store.Suspended, Limit: 50, Roots: true})
		if err != nil || len(runs) != 50 || len(runs[0].Pending) != 1 {
			b.Fatalf("list: %d runs, %v", len(runs), err)
		}
		t1 := time.Now()
		rows, err := raw.Query(bare)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var id, agent, status, input string
			var callID, tool, args, kind sql.NullString
			var created, updated int64
			if err := rows.Scan(&id, &agent, &status, &input, &created, &updated, &callID, &tool, &args, &kind); err != nil {
				b.Fatal(err)
			}
			n++
		}
		rows.Close()
		if n != 50 {
			b.Fatalf("bare query: %d rows", n)
		}
		tl, tb = tl+t1.Sub(t0), tb+time.Since(t1)
	}
	b.StopTimer()
	b.ReportMetric(float64(tl.Microseconds())/float64(b.N), "list-us")
	b.ReportMetric(float64(tb.Microseconds())/float64(b.N), "bare-us")
	b.ReportMetric(float64(tl)/float64(tb), "ratio")
}
