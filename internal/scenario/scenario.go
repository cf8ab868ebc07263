// Package scenario runs testscript scenarios against agentctl, the way a
// user drives it: agentctl test runs users' scenarios with it, and the
// project's own script tests share its environment and commands.
package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Options configure Run.
type Options struct {
	// Files are the scenario files (see Files).
	Files []string
	// Filter, when set, runs only the scenarios whose name it matches.
	Filter *regexp.Regexp
	// Update rewrites the files cmp compares against.
	Update bool
	// Timeout bounds each scenario: at it, the command running is
	// interrupted (then killed), and the scenario fails with its log so
	// far. Zero: DefaultTimeout; negative: none.
	Timeout time.Duration
}

// DefaultTimeout is a scenario's time limit unless Options say otherwise;
// a Timeout over MaxTimeout is none.
const (
	DefaultTimeout = 2 * time.Minute
	MaxTimeout     = 10000 * time.Hour
)

// Report is the outcome of Run.
type Report struct {
	Results []*Result
	// Errors are failures outside any scenario.
	Errors []string
}

// Run runs scenarios one after another, each in a fresh work directory
// holding its files, with a fresh database ($AGENTCTL_DB), this very
// binary first on PATH as agentctl, and $SUITE naming the directory of
// the scenario's file.
func Run(opts Options) (*Report, error) {
	bin, cleanup, err := selfOnPath()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	dirs, files := suiteDirs(opts.Files)
	r := &scriptRun{filter: opts.Filter, dirs: dirs, files: files, timeout: opts.Timeout}
	switch {
	case r.timeout == 0:
		r.timeout = DefaultTimeout
	case r.timeout > MaxTimeout:
		r.timeout = -1 // no limit: the arithmetic of deadlines would overflow
	}
	p := testscript.Params{
		UpdateScripts: opts.Update,
		Cmds:          Commands(),
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			if t, ok := env.T().(*scriptT); ok {
				env.Setenv("SUITE", r.dirs[t.res.Name])
			}
			return Setup(env)
		},
	}
	// One file at a time, each with a deadline of its own.
	for _, f := range opts.Files {
		p.Files = []string{f}
		if r.timeout > 0 {
			p.Deadline = time.Now().Add(deadline(r.timeout))
		}
		testscript.RunT(r, p)
	}
	return &Report{Results: r.results, Errors: r.errs}, nil
}

// deadline is how far off to set testscript's deadline for a scenario's
// commands to be stopped after timeout: testscript stops them two grace
// periods before it, each a twentieth of the time left or 100ms,
// whichever is longer.
func deadline(timeout time.Duration) time.Duration {
	if d := time.Duration(float64(timeout) / 0.9); d/20 >= 100*time.Millisecond {
		return d
	}
	return timeout + 200*time.Millisecond
}

// Marker, in a database's directory, marks a scenario's throwaway
// database: the user who owns the directory and the marker may decide on
// behalf of anyone there (--as), so that scenarios record names. A
// database anywhere else gets no such grant.
const Marker = ".agentctl-scenario"

// Setup gives a scenario its own database in its work directory, marked
// as a scenario's (Marker). Policy scenarios put their database
// elsewhere.
func Setup(env *testscript.Env) error {
	env.Setenv("AGENTCTL_DB", filepath.Join(env.WorkDir, "agentctl.db"))
	return os.WriteFile(filepath.Join(env.WorkDir, Marker), []byte("agentctl test: a throwaway database\n"), 0o644)
}

// Files lists the *.txtar files named or found under directories.
func Files(args []string) ([]string, error) {
	var files []string
	for _, arg := range args {
		fi, err := os.Stat(arg)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			files = append(files, arg)
			continue
		}
		err = filepath.WalkDir(arg, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".txtar") {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.txtar scenarios in %s", strings.Join(args, ", "))
	}
	return files, nil
}

// DefaultDirs are the directories agentctl test runs when given none:
// testdata/scripts and tests, those of them that exist in the current
// directory, in that order; none when neither does.
func DefaultDirs() []string {
	var dirs []string
	for _, d := range []string{filepath.Join("testdata", "scripts"), "tests"} {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// suiteDirs maps scenario names (as testscript names them) to the
// absolute directory of their file, and to the file as given.
func suiteDirs(files []string) (dirs, paths map[string]string) {
	dirs, paths = map[string]string{}, map[string]string{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txtar")
		for i := 1; dirs[name] != ""; i++ {
			name = fmt.Sprintf("%s#%d", strings.TrimSuffix(filepath.Base(f), ".txtar"), i)
		}
		abs, err := filepath.Abs(filepath.Dir(f))
		if err != nil {
			abs = filepath.Dir(f)
		}
		dirs[name], paths[name] = abs, f
	}
	return dirs, paths
}

// selfOnPath makes this very binary reachable as "agentctl" in a temporary
// directory, for scenarios to exec: a user who installed only agentctl has
// all a scenario needs.
func selfOnPath() (dir string, cleanup func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, fmt.Errorf("test: locating agentctl: %w", err)
	}
	dir, err = os.MkdirTemp("", "agentctl-test-bin")
	if err != nil {
		return "", nil, err
	}
	name := "agentctl"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if err := os.Symlink(self, filepath.Join(dir, name)); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("test: %w", err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// Result is one scenario's outcome.
type Result struct {
	Name    string  `json:"name"`
	File    string  `json:"file"` // the scenario's file, as given or found in a directory given
	Passed  bool    `json:"passed"`
	Skipped bool    `json:"skipped,omitempty"`
	Seconds float64 `json:"seconds"`
	Log     string  `json:"log,omitempty"`
}

// Failure is the line of a failed scenario's log that says why it
// failed, "FILE:LINE: what", or the last "FAIL:" line (a timeout) when
// none names the scenario's file; "" when there is neither. A command's
// output in the log that looks like one is passed over while the
// scenario's own is there.
func (r *Result) Failure() string {
	last := ""
	for _, line := range strings.Split(r.Log, "\n") {
		msg, ok := strings.CutPrefix(line, "FAIL: ")
		switch {
		case !ok:
		case r.File != "" && strings.HasPrefix(msg, r.File+":"):
			return msg
		default:
			last = msg
		}
	}
	return last
}

// scriptRun is the testscript.T scenarios are driven with: it runs them
// one after another and keeps each one's outcome and log.
type scriptRun struct {
	filter  *regexp.Regexp
	dirs    map[string]string // scenario name -> directory of its file
	files   map[string]string // scenario name -> its file
	timeout time.Duration     // each scenario's; negative: none
	mu      sync.Mutex
	results []*Result
	errs    []string // failures outside any scenario
}

// scriptT is one scenario's testscript.T.
type scriptT struct {
	run             *scriptRun
	res             *Result
	mu              sync.Mutex // the log: a scenario left running past its time may still write
	log             strings.Builder
	failed, skipped bool
}

// The run-level methods are what testscript calls outside any scenario:
// a fatal problem (no scripts, say) is an error; a log is only a log.
func (r *scriptRun) Skip(args ...any)  { r.Fatal(args...) }
func (r *scriptRun) Fatal(args ...any) { r.errs = append(r.errs, fmt.Sprint(args...)) }
func (r *scriptRun) Parallel()         {}
func (r *scriptRun) Log(args ...any)   { fmt.Fprintln(os.Stderr, args...) }
func (r *scriptRun) FailNow()          { r.errs = append(r.errs, "failed") }
func (r *scriptRun) Verbose() bool     { return true }

// Run runs one scenario to its end, in its own goroutine as testing does,
// since testscript stops a failing one with runtime.Goexit.
func (r *scriptRun) Run(name string, f func(testscript.T)) {
	if r.filter != nil && !r.filter.MatchString(name) {
		return
	}
	t := &scriptT{run: r, res: &Result{Name: name, File: r.files[name]}}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(t)
	}()
	var late <-chan time.Time // a scenario stuck outside any command
	if r.timeout > 0 {
		late = time.After(r.timeout + r.timeout/5 + time.Second)
	}
	select {
	case <-done:
	case <-late:
		t.Log("(the scenario did not stop; it is left behind)")
		t.set(&t.failed)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.res.Seconds = time.Since(start).Seconds()
	if r.timeout > 0 && time.Since(start) >= r.timeout {
		fmt.Fprintf(&t.log, "FAIL: timed out after %s (agentctl test -timeout)\n", r.timeout)
		t.failed = true
	}
	t.res.Passed = !t.failed
	t.res.Skipped = t.skipped && !t.failed
	t.res.Log = trimEnv(t.log.String())
	r.mu.Lock()
	r.results = append(r.results, t.res)
	r.mu.Unlock()
}

func (t *scriptT) Skip(args ...any)  { t.Log(args...); t.set(&t.skipped); runtime.Goexit() }
func (t *scriptT) Fatal(args ...any) { t.Log(args...); t.FailNow() }
func (t *scriptT) Parallel()         {}
func (t *scriptT) Log(args ...any)   { t.mu.Lock(); fmt.Fprintln(&t.log, args...); t.mu.Unlock() }
func (t *scriptT) FailNow()          { t.set(&t.failed); runtime.Goexit() }
func (t *scriptT) Verbose() bool     { return true }
func (t *scriptT) Run(name string, f func(testscript.T)) {
	t.run.Run(t.res.Name+"/"+name, f)
}

// set sets one of t's flags.
func (t *scriptT) set(flag *bool) { t.mu.Lock(); *flag = true; t.mu.Unlock() }

// trimEnv drops the environment testscript logs before the script.
func trimEnv(log string) string {
	if _, rest, ok := strings.Cut(log, "\n\n"); ok && strings.HasPrefix(log, "WORK=") {
		return rest
	}
	return log
}

// Commands are the commands agentctl adds to testscript's in scenarios:
//
//	exits N PROG [ARGS...]  run PROG like exec and require exit code N
//	capture NAME REGEXP     set $NAME to REGEXP's first group in the last stdout
//	jsonlines N             the last stdout is N lines, each an event (JSON
//	                        with "type" and "runId")
func Commands() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"capture":   capture,
		"exits":     exits,
		"jsonlines": jsonlines,
	}
}

func capture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: capture NAME REGEXP")
	}
	re, err := regexp.Compile("(?m)" + args[1]) // like stdout: ^ and $ match at line ends
	ts.Check(err)
	m := re.FindStringSubmatch(ts.ReadFile("stdout"))
	if len(m) < 2 {
		ts.Fatalf("capture: no match for %q in stdout", args[1])
	}
	ts.Setenv(args[0], m[1])
}

func exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

func jsonlines(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: jsonlines N")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	lines := strings.Split(strings.TrimSuffix(ts.ReadFile("stdout"), "\n"), "\n")
	if len(lines) != want {
		ts.Fatalf("%d lines, want %d", len(lines), want)
	}
	for i, l := range lines {
		var ev struct {
			Type  *string `json:"type"`
			RunID *string `json:"runId"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Type == nil || ev.RunID == nil {
			ts.Fatalf("line %d is not an event (%v): %s", i+1, err, l)
		}
	}
}
