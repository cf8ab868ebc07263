// Command testsum reads `go test -json` on standard input and prints what
// a plain `go test` run prints (each package's result line, and the
// output of tests that failed), then a summary: the tests that passed,
// failed and were skipped, the wall time since it started, and the
// slowest tests. make test pipes go test into it, so that every run shows
// where its time went.
//
//	go test -json ./... | go run ./internal/testsum [-slowest N] [-label NAME] [-since UNIXTIME]
//
// It exits 1 when a test or a package failed, or when the input held no
// test at all, and 2 when it cannot read its input.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

func main() { os.Exit(run(os.Stdin, os.Stdout, os.Args[1:], time.Now())) }

// event is one line of go test -json (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// result is a test that ended.
type result struct {
	name    string // package and test
	action  string // pass, fail or skip
	elapsed time.Duration
	parent  bool // it has subtests
}

// summary gathers what the run printed and how each test ended.
type summary struct {
	out      io.Writer
	outputs  map[string]*strings.Builder // a running test's output, by package and test
	results  map[string]*result
	order    []string
	pkgFails int             // packages that failed outside any test
	failedIn map[string]bool // packages with a test that failed
	events   int
}

func run(in io.Reader, out io.Writer, args []string, start time.Time) int {
	fs := flag.NewFlagSet("testsum", flag.ContinueOnError)
	slowest := fs.Int("slowest", 10, "how many of the slowest tests to list")
	label := fs.String("label", "tests", "what the summary names the run: one word")
	since := fs.Float64("since", 0, "when the run began, in seconds since 1970 (default: when testsum began)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *since > 0 {
		start = time.Unix(0, int64(*since*1e9))
	}
	s := &summary{out: out, outputs: map[string]*strings.Builder{}, results: map[string]*result{}, failedIn: map[string]bool{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for sc.Scan() {
		s.line(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(out, "testsum: reading go test -json: %v\n", err)
		return 2
	}
	return s.report(*label, *slowest, time.Since(start))
}

// line handles one line of input: an event, or text go test printed
// outside any (a build error, say), which is passed on as it is.
func (s *summary) line(b []byte) {
	var e event
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil || e.Action == "" {
		fmt.Fprintf(s.out, "%s\n", b)
		return
	}
	s.events++
	key := e.Package + " " + e.Test
	switch e.Action {
	case "build-output":
		fmt.Fprint(s.out, e.Output)
	case "output":
		if e.Test == "" {
			if !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "--- ") &&
				e.Output != "PASS\n" && e.Output != "FAIL\n" {
				fmt.Fprint(s.out, e.Output)
			}
			return
		}
		b := s.outputs[key]
		if b == nil {
			b = &strings.Builder{}
			s.outputs[key] = b
		}
		b.WriteString(e.Output)
	case "pass", "fail", "skip":
		if e.Test == "" {
			if e.Action == "fail" && !s.failedIn[e.Package] {
				s.pkgFails++ // a build failure, or a failure outside any test
			}
			if e.Action == "fail" {
				s.flush(e.Package)
			}
			return
		}
		if e.Action == "fail" {
			s.failedIn[e.Package] = true
		}
		s.parentOf(e.Package, e.Test)
		s.results[key] = &result{name: e.Package + " " + e.Test, action: e.Action,
			elapsed: time.Duration(e.Elapsed * float64(time.Second)), parent: s.results[key] != nil && s.results[key].parent}
		s.order = append(s.order, key)
		if e.Action == "fail" {
			if b := s.outputs[key]; b != nil {
				fmt.Fprint(s.out, b.String())
			}
		}
		delete(s.outputs, key)
	}
}

// flush prints the output of a failed package's tests that never ended
// (its binary crashed, or timed out, while they ran).
func (s *summary) flush(pkg string) {
	var keys []string
	for k := range s.outputs {
		if strings.HasPrefix(k, pkg+" ") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprint(s.out, s.outputs[k].String())
		delete(s.outputs, k)
	}
}

// parentOf marks the tests above a subtest as parents before they end
// (a parent ends after its subtests).
func (s *summary) parentOf(pkg, test string) {
	for i := strings.LastIndexByte(test, '/'); i > 0; i = strings.LastIndexByte(test[:i], '/') {
		key := pkg + " " + test[:i]
		if s.results[key] == nil {
			s.results[key] = &result{parent: true}
		}
	}
}

// report prints the counts, the wall time and the slowest tests, and
// returns the exit code.
func (s *summary) report(label string, slowest int, wall time.Duration) int {
	count := map[string]int{}
	var leaves []*result
	for _, k := range s.order {
		r := s.results[k]
		count[r.action]++
		if !r.parent {
			leaves = append(leaves, r)
		}
	}
	fmt.Fprintf(s.out, "\n%s: %d passed, %d failed, %d skipped\n", label, count["pass"], count["fail"]+s.pkgFails, count["skip"])
	fmt.Fprintf(s.out, "(tests and subtests; a package that failed outside any test, such as one that does not build, counts as one failure) in %s wall time\n", wall.Round(time.Second))
	sort.SliceStable(leaves, func(i, j int) bool { return leaves[i].elapsed > leaves[j].elapsed })
	if len(leaves) > slowest {
		leaves = leaves[:slowest]
	}
	if len(leaves) > 0 {
		fmt.Fprintf(s.out, "the %d slowest:\n", len(leaves))
	}
	for _, r := range leaves {
		fmt.Fprintf(s.out, "  %7.2fs  %s\n", r.elapsed.Seconds(), strings.TrimPrefix(r.name, "github.com/agentctl/agentctl/"))
	}
	switch {
	case count["fail"] > 0 || s.pkgFails > 0:
		return 1
	case len(s.order) == 0:
		fmt.Fprintln(s.out, "testsum: no test ran")
		return 1
	}
	return 0
}
