package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store/sqlite"
	"github.com/agentctl/agentctl/spec"
)

// benchSpec is the approve benchmark's agent: a scripted model and a
// side-effect-free tool that needs approval.
const benchSpec = `
version: 1
models:
  script:
    provider: scripted
    turns:
      - toolCalls: [{tool: restart, args: {env: prod, service: nginx}}]
      - text: "nginx was restarted: ${{ results[0] }}"
tools:
  restart:
    description: Restart a service.
    input:
      type: object
      properties: {env: {type: string, enum: [staging, prod]}, service: {type: string}}
      required: [env, service]
    output: "restarted ${{ input.service }} in ${{ input.env }}"
    requireApproval: true
agents:
  oncall: {model: script, tools: [restart], instructions: You are on call.}
`

// fillerRuns is how many runs the database already holds.
const fillerRuns = 100_000

// buildFlags are make build's flags (Makefile, build:), so that the
// benchmarks measure the binary users run; the floors get them too.
var buildFlags = []string{"-buildvcs=auto", "-trimpath", "-ldflags=-s -w"}

// rusageSrc is the launcher the cold benchmarks start their commands
// through ("rusage OUT CMD ARGS..."): it runs CMD, exits with its exit
// code and writes to OUT the wall time (ns) from start to exit and the
// peak RSS (ru_maxrss, KiB) that CMD's own wait4 reports. Why a
// launcher: on Linux a child's ru_maxrss includes the peak RSS of the
// address space it was exec'd from, and Go's os/exec starts children
// with CLONE_VM|CLONE_VFORK, so a command started by the test process
// would report at least the test's own peak (it built a database of
// fillerRuns runs). Started from this small program, it reports its own.
const rusageSrc = `package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "rusage:", err)
		os.Exit(125)
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if ru == nil {
		ru = &syscall.Rusage{}
	}
	if err := os.WriteFile(os.Args[1], fmt.Appendf(nil, "%d %d\n", d.Nanoseconds(), ru.Maxrss), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "rusage:", err)
		os.Exit(125)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}
`

var binaries = sync.OnceValues(func() (dir string, err error) {
	dir, err = os.MkdirTemp("", "agentctl-bench")
	if err != nil {
		return "", err
	}
	for out, args := range map[string][]string{
		"agentctl":         {"."},
		"floor":            {"./testdata/floor"},
		"floor-jsonschema": {"-tags", "jsonschema", "./testdata/floor"},
	} {
		cmd := exec.Command("go", slices.Concat([]string{"build"}, buildFlags, []string{"-o", filepath.Join(dir, out)}, args)...)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return "", err
		}
	}
	src := filepath.Join(dir, "rusage.go")
	if err := os.WriteFile(src, []byte(rusageSrc), 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "rusage"), src)
	cmd.Dir, cmd.Stderr = dir, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", err
	}
	return dir, nil
})

// benchDB makes a database with fillerRuns completed runs and n
// suspended runs of benchSpec, and returns its path and the suspended
// runs' ids.
func benchDB(b *testing.B, n int) (string, []string) {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "bench.db")
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := spec.Load([]spec.Source{{Name: "bench.yaml", Data: []byte(benchSpec)}})
	if err != nil {
		b.Fatal(err)
	}
	g, err := engine.Compile(s, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	e := engine.New(db, engine.Config{})
	ids := make([]string, n)
	for i := range ids {
		v, err := e.Start(ctx, g, engine.StartOptions{Agent: "oncall", Input: "nginx is down in prod"})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = v.RunID
	}
	// Filler: completed runs with one call each, copied from the first run.
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	_, err = raw.Exec(`
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO runs (id, agent, status, input, output, error, spec_hash, step, state, created_at, updated_at)
		SELECT printf('00F%023d', i), agent, 'completed', input, 'nginx was restarted', '', spec_hash, 2, state, created_at, updated_at
		FROM n, (SELECT * FROM runs WHERE id = ?);
		INSERT INTO calls (run_id, call_id, seq, step, tool, args, status, kind, result, created_at, updated_at)
		SELECT id, 'call_1', 1, 1, 'restart', '{"env":"prod","service":"nginx"}', 'succeeded', '', 'restarted', created_at, updated_at
		FROM runs WHERE id LIKE '00F%';`, fillerRuns, ids[0])
	if err != nil {
		b.Fatal(err)
	}
	return path, ids
}

func timeCmd(b *testing.B, wantExit int, name string, args ...string) time.Duration {
	d, _ := timeCmdRSS(b, wantExit, name, args...)
	return d
}

// timeCmdRSS runs a command through the rusage launcher and returns its
// wall time and its own peak RSS in bytes.
func timeCmdRSS(b *testing.B, wantExit int, name string, args ...string) (time.Duration, int64) {
	b.Helper()
	dir, err := binaries()
	if err != nil {
		b.Fatal(err)
	}
	res := filepath.Join(b.TempDir(), "rusage.out")
	cmd := exec.Command(filepath.Join(dir, "rusage"), append([]string{res, name}, args...)...)
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != wantExit {
		b.Fatalf("%s %v: exit %d (%v), want %d\n%s", name, args, code, err, wantExit, out)
	}
	data, err := os.ReadFile(res)
	if err != nil {
		b.Fatal(err)
	}
	var ns, kib int64
	if _, err := fmt.Sscan(string(data), &ns, &kib); err != nil {
		b.Fatalf("rusage output %q: %v", data, err)
	}
	return time.Duration(ns), kib * 1024 // ru_maxrss is in KiB on Linux
}

func median[T cmp.Ordered](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkColdApprove times `agentctl approve` from process start to
// exit (the approval completes the run) against the floor program, run
// alternately, on a database holding fillerRuns runs. Run it with
// -benchtime 25x for 25 triples; it reports the medians and the ratio,
// and the peak RSS of the approve processes alone (largest and median).
// A third program, the floor with the JSON Schema library linked
// (floorjs), shows the share of that library's package init.
func BenchmarkColdApprove(b *testing.B) {
	dir, err := binaries()
	if err != nil {
		b.Fatal(err)
	}
	path, ids := benchDB(b, b.N)
	agentctl, floor, floorJS := filepath.Join(dir, "agentctl"), filepath.Join(dir, "floor"), filepath.Join(dir, "floor-jsonschema")
	var tA, tF, tJ []time.Duration
	var rss, rssF []int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, r := timeCmdRSS(b, 0, floor, path)
		tF, rssF = append(tF, d), append(rssF, r)
		d, r = timeCmdRSS(b, 0, agentctl, "--db", path, "approve", ids[i])
		tA, rss = append(tA, d), append(rss, r)
		tJ = append(tJ, timeCmd(b, 0, floorJS, path))
	}
	b.StopTimer()
	a, f, j := median(tA), median(tF), median(tJ)
	b.ReportMetric(float64(a.Microseconds())/1000, "approve-ms")
	b.ReportMetric(float64(f.Microseconds())/1000, "floor-ms")
	b.ReportMetric(float64(j.Microseconds())/1000, "floorjs-ms")
	b.ReportMetric(float64(a)/float64(f), "ratio")
	b.ReportMetric(float64(a)/float64(j), "ratio-vs-floorjs")
	// Peak RSS of the approve process alone (and of the floor's), in MiB.
	b.ReportMetric(float64(slices.Max(rss))/(1<<20), "peak-rss-MiB")
	b.ReportMetric(float64(median(rss))/(1<<20), "peak-rss-median-MiB")
	b.ReportMetric(float64(slices.Max(rssF))/(1<<20), "floor-peak-rss-MiB")
}

// BenchmarkColdRunToSuspension times `agentctl run` from process start
// to exit 3 (suspended for approval) against the floor program.
func BenchmarkColdRunToSuspension(b *testing.B) {
	dir, err := binaries()
	if err != nil {
		b.Fatal(err)
	}
	path, _ := benchDB(b, 1)
	specFile := filepath.Join(b.TempDir(), "bench.yaml")
	if err := os.WriteFile(specFile, []byte(benchSpec), 0o644); err != nil {
		b.Fatal(err)
	}
	agentctl, floor := filepath.Join(dir, "agentctl"), filepath.Join(dir, "floor")
	var tR, tF []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tF = append(tF, timeCmd(b, 0, floor, path))
		tR = append(tR, timeCmd(b, 3, agentctl, "--db", path, "run", "oncall", "-f", specFile, "--input", "nginx is down"))
	}
	b.StopTimer()
	r, f := median(tR), median(tF)
	b.ReportMetric(float64(r.Microseconds())/1000, "run-ms")
	b.ReportMetric(float64(f.Microseconds())/1000, "floor-ms")
	b.ReportMetric(float64(r)/float64(f), "ratio")
}

// BenchmarkColdHelp times `agentctl --help` from process start to exit
// against the floor that links the JSON Schema library (floorjs, which
// opens the database and reads one row), alternately: what every
// command pays before it does anything of its own.
func BenchmarkColdHelp(b *testing.B) {
	dir, err := binaries()
	if err != nil {
		b.Fatal(err)
	}
	path, _ := benchDB(b, 1)
	agentctl, floorJS := filepath.Join(dir, "agentctl"), filepath.Join(dir, "floor-jsonschema")
	var tH, tJ []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tJ = append(tJ, timeCmd(b, 0, floorJS, path))
		tH = append(tH, timeCmd(b, 0, agentctl, "--help"))
	}
	b.StopTimer()
	h, j := median(tH), median(tJ)
	b.ReportMetric(float64(h.Microseconds())/1000, "help-ms")
	b.ReportMetric(float64(j.Microseconds())/1000, "floorjs-ms")
	b.ReportMetric(float64(h)/float64(j), "ratio")
}
