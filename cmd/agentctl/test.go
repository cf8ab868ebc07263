package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/spf13/cobra"
)

const testHelp = `Test runs testscript scenarios (*.txtar) against your agent specs, the
way a user would drive agentctl: each scenario gets a fresh work directory
holding its files, a fresh database ($AGENTCTL_DB), and this agentctl on
PATH; $SUITE is the directory of the scenario file, to reach specs beside
it. Directories are searched recursively. It prints one line per
scenario, the failing ones with the script as it ran, and exits 0 only if
all pass.

Besides testscript's commands (exec, stdout, stderr, cmp, env, stdin, ! for
expected failure, & for background, wait, ...), scenarios have:

  exits N PROG [ARGS...]  run PROG like exec and require exit code N
  capture NAME REGEXP     set $NAME to REGEXP's first group in the last stdout
  jsonlines N             the last stdout is N lines, each an event (JSON
                          with "type" and "runId")

A scenario:

  exits 3 agentctl run oncall -f oncall.yaml --input 'nginx is down'
  capture ID '^run ([0-9A-Z]{26}) '
  exec agentctl approve $ID
  stdout 'nginx was restarted'

  -- oncall.yaml --
  version: 1
  ...`

func (a *app) testCmd() *cobra.Command {
	var (
		runPat          string
		verbose, update bool
		out             format = "text"
	)
	// Go-style flags (-run, -v, -update), as go test and testscript users
	// expect; double dashes work too.
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.StringVar(&runPat, "run", "", "run only the scenarios whose name matches `REGEXP`")
	fs.BoolVar(&verbose, "v", false, "print the log of passing scenarios too")
	fs.BoolVar(&update, "update", false, "rewrite the files that cmp compares against with what the commands printed")
	fs.Var(&out, "o", "output format: text or json")
	cmd := &cobra.Command{
		Use:   "test [DIR|FILE...]",
		Short: "Run testscript scenarios against agent specs",
		Long:  testHelp,
		Example: `  agentctl test tests/
  agentctl test -run 'approve|decline' -v tests/
  agentctl test -update tests/golden.txtar
  agentctl test -o json tests/ > results.json`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, argv []string) error {
			fs.SetOutput(io.Discard)
			if err := fs.Parse(argv); err != nil {
				if errors.Is(err, flag.ErrHelp) {
					return cmd.Help()
				}
				return usageErr(fmt.Errorf("test: %w", err))
			}
			argv = fs.Args()
			if len(argv) == 0 {
				argv = []string{"."}
			}
			var re *regexp.Regexp
			if runPat != "" {
				var err error
				if re, err = regexp.Compile(runPat); err != nil {
					return usageErr(fmt.Errorf("-run: %w", err))
				}
			}
			files, err := scenarioFiles(argv)
			if err != nil {
				return usageErr(err)
			}
			bin, cleanup, err := selfOnPath()
			if err != nil {
				return err
			}
			defer cleanup()
			r := &scriptRun{filter: re, dirs: suiteDirs(files)}
			testscript.RunT(r, testscript.Params{
				Files:         files,
				UpdateScripts: update,
				Cmds:          scriptCmds(),
				Setup: func(env *testscript.Env) error {
					env.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
					env.Setenv("AGENTCTL_DB", filepath.Join(env.WorkDir, "agentctl.db"))
					// The user running the suite may decide --as anyone, so
					// that scenarios record names; clear it to test policy.
					env.Setenv("AGENTCTL_DELEGATES", osUser())
					if t, ok := env.T().(*scriptT); ok {
						env.Setenv("SUITE", r.dirs[t.res.Name])
					}
					return nil
				},
			})
			return a.testReport(r, out, verbose)
		},
	}
	cmd.SetHelpTemplate(cmd.HelpTemplate() + "\nFlags:\n" + flagUsage(fs))
	return cmd
}

// flagUsage renders a flag set's flags for help.
func flagUsage(fs *flag.FlagSet) string {
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "  -%s %s\n        %s\n", f.Name, name, usage)
	})
	return b.String()
}

// scenarioFiles lists the *.txtar files named or found under directories.
func scenarioFiles(args []string) ([]string, error) {
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

// suiteDirs maps scenario names (as testscript names them) to the
// absolute directory of their file.
func suiteDirs(files []string) map[string]string {
	dirs := map[string]string{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txtar")
		for i := 1; dirs[name] != ""; i++ {
			name = fmt.Sprintf("%s#%d", strings.TrimSuffix(filepath.Base(f), ".txtar"), i)
		}
		abs, err := filepath.Abs(filepath.Dir(f))
		if err != nil {
			abs = filepath.Dir(f)
		}
		dirs[name] = abs
	}
	return dirs
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

// scenarioResult is one scenario's outcome (agentctl test -o json).
type scenarioResult struct {
	Name    string  `json:"name"`
	Passed  bool    `json:"passed"`
	Skipped bool    `json:"skipped,omitempty"`
	Seconds float64 `json:"seconds"`
	Log     string  `json:"log,omitempty"`
}

// scriptRun is the testscript.T agentctl test drives scenarios with: it
// runs them one after another and keeps each one's outcome and log.
type scriptRun struct {
	filter  *regexp.Regexp
	dirs    map[string]string // scenario name -> directory of its file
	mu      sync.Mutex
	results []*scenarioResult
	errs    []string // failures outside any scenario
}

// scriptT is one scenario's testscript.T.
type scriptT struct {
	run             *scriptRun
	res             *scenarioResult
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
	t := &scriptT{run: r, res: &scenarioResult{Name: name}}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(t)
	}()
	<-done
	t.res.Seconds = time.Since(start).Seconds()
	t.res.Passed = !t.failed
	t.res.Skipped = t.skipped
	t.res.Log = trimEnv(t.log.String())
	r.mu.Lock()
	r.results = append(r.results, t.res)
	r.mu.Unlock()
}

func (t *scriptT) Skip(args ...any)  { t.Log(args...); t.skipped = true; runtime.Goexit() }
func (t *scriptT) Fatal(args ...any) { t.Log(args...); t.FailNow() }
func (t *scriptT) Parallel()         {}
func (t *scriptT) Log(args ...any)   { fmt.Fprintln(&t.log, args...) }
func (t *scriptT) FailNow()          { t.failed = true; runtime.Goexit() }
func (t *scriptT) Verbose() bool     { return true }
func (t *scriptT) Run(name string, f func(testscript.T)) {
	t.run.Run(t.res.Name+"/"+name, f)
}

// trimEnv drops the environment testscript logs before the script.
func trimEnv(log string) string {
	if _, rest, ok := strings.Cut(log, "\n\n"); ok && strings.HasPrefix(log, "WORK=") {
		return rest
	}
	return log
}

// testReport prints the outcomes and returns the command's exit.
func (a *app) testReport(r *scriptRun, out format, verbose bool) error {
	passed, failed := 0, 0
	for _, res := range r.results {
		if res.Passed {
			passed++
		} else {
			failed++
		}
	}
	failed += len(r.errs)
	if out == "json" {
		results := r.results
		if results == nil {
			results = []*scenarioResult{}
		}
		if !verbose {
			for _, res := range results {
				if res.Passed {
					res.Log = ""
				}
			}
		}
		if err := writeJSON(a.stdout, map[string]any{"passed": passed, "failed": failed, "scenarios": results, "errors": r.errs}); err != nil {
			return err
		}
	} else {
		for _, e := range r.errs {
			fmt.Fprintf(a.stdout, "ERROR  %s\n", e)
		}
		for _, res := range r.results {
			status := "PASS"
			switch {
			case res.Skipped:
				status = "SKIP"
			case !res.Passed:
				status = "FAIL"
			}
			fmt.Fprintf(a.stdout, "%s  %s  (%.2fs)\n", status, res.Name, res.Seconds)
			if !res.Passed || verbose {
				for _, line := range strings.Split(strings.TrimRight(res.Log, "\n"), "\n") {
					fmt.Fprintf(a.stdout, "    %s\n", line)
				}
			}
		}
		fmt.Fprintf(a.stdout, "%d passed, %d failed\n", passed, failed)
	}
	if failed > 0 || passed == 0 {
		return &exitErr{code: exitError}
	}
	return nil
}
