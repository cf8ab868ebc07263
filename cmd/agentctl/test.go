package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/duration"
	"github.com/agentctl/agentctl/internal/scenario"
)

const testHelp = `Test runs testscript scenarios (*.txtar) against your agent specs, the
way a user would drive agentctl: each scenario gets a fresh work directory
holding its files, a fresh database ($AGENTCTL_DB), and this agentctl on
PATH; $SUITE is the directory of the scenario file, to reach specs beside
it. Directories are searched recursively. Without arguments, test runs
./testdata/scripts and ./tests, those that exist, and asks for paths if
neither does. It prints one line per scenario, the failing ones with the
script as it ran, and exits 0 only if all pass.

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
		out             testFormat = "text"
	)
	// Go-style flags (-run, -v, -update), as go test and testscript users
	// expect; double dashes work too.
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.StringVar(&runPat, "run", "", "run only the scenarios whose name matches `REGEXP`")
	fs.BoolVar(&verbose, "v", false, "print the log of passing scenarios too")
	fs.BoolVar(&update, "update", false, "rewrite the files that cmp compares against with what the commands printed")
	fs.Var(&out, "o", "output `format`: text, json or junit (JUnit XML, for CI)")
	timeout := scenario.DefaultTimeout
	fs.Var(duration.Value{D: &timeout}, "timeout", "fail a scenario that runs longer than `DURATION` (its command interrupted, then killed), with its output so far; 0 for no limit")
	cmd := &cobra.Command{
		Use:   "test [DIR|FILE...]",
		Short: "Run testscript scenarios against agent specs",
		Long:  testHelp,
		Example: `  agentctl test
  agentctl test tests/
  agentctl test -run 'approve|decline' -v tests/
  agentctl test -update tests/golden.txtar
  agentctl test -o json tests/ > results.json`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, argv []string) error {
			fs.SetOutput(io.Discard)
			argv, err := parseInterleaved(fs, argv)
			if err != nil {
				if errors.Is(err, flag.ErrHelp) {
					return cmd.Help()
				}
				return usageErr(fmt.Errorf("test: %w", err))
			}
			if out == "json" {
				a.errJSON = true // cobra does not parse this command's flags
			}
			if len(argv) == 0 {
				if argv = scenario.DefaultDirs(); len(argv) == 0 {
					return usageErr(errors.New("test: which scenarios? name their directories or files: there is no ./testdata/scripts or ./tests here to run by default"))
				}
			}
			var re *regexp.Regexp
			if runPat != "" {
				var err error
				if re, err = regexp.Compile(runPat); err != nil {
					return usageErr(fmt.Errorf("-run: %w", err))
				}
			}
			files, err := scenario.Files(argv)
			if err != nil {
				return usageErr(err)
			}
			switch {
			case timeout < 0 || timeout > scenario.MaxTimeout:
				return usageErr(fmt.Errorf("-timeout %s: want 0 (no limit) up to %s", duration.Format(timeout), duration.Format(scenario.MaxTimeout)))
			case timeout == 0:
				timeout = -1 // no limit
			}
			r, err := scenario.Run(scenario.Options{Files: files, Filter: re, Update: update, Timeout: timeout})
			if err != nil {
				return err
			}
			return a.testReport(r, out, verbose)
		},
	}
	// cobra parses none of this command's flags, its own or the global
	// ones (--db, ...): the help lists the Go-style flags it takes.
	cmd.SetHelpTemplate(testHelpTemplate + flagUsage(fs))
	return cmd
}

// testHelpTemplate is cobra's help, with the flags test parses itself.
const testHelpTemplate = `{{with (or .Long .Short)}}{{. | trimTrailingWhitespaces}}

{{end}}Usage:
  {{.UseLine}}

Examples:
{{.Example}}

Flags:
  -h, --help
        help for test
`

// flagUsage renders a flag set's flags for help.
func flagUsage(fs *flag.FlagSet) string {
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		if name != "" {
			name = " " + name
		}
		fmt.Fprintf(&b, "  -%s%s\n        %s\n", f.Name, name, usage)
	})
	return b.String()
}

// parseInterleaved parses Go-style flags before, between and after the
// positional arguments, which it returns in order; "--" ends the flags.
func parseInterleaved(fs *flag.FlagSet, argv []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(argv); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// Parse stops at the first argument that is no flag, or just
		// after a "--" that it drops.
		if n := len(argv) - len(rest); n > 0 && argv[n-1] == "--" && !takesValue(fs, argv[:n-1]) {
			return append(pos, rest...), nil
		}
		pos, argv = append(pos, rest[0]), rest[1:]
	}
}

// takesValue reports whether the last of args is a flag that wants the
// argument after it as its value ("-run --").
func takesValue(fs *flag.FlagSet, args []string) bool {
	if len(args) == 0 {
		return false
	}
	name, ok := strings.CutPrefix(args[len(args)-1], "-")
	if !ok || strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(strings.TrimPrefix(name, "-"))
	if f == nil {
		return false
	}
	b, isBool := f.Value.(interface{ IsBoolFlag() bool })
	return !isBool || !b.IsBoolFlag()
}

// testReport prints the outcomes and returns the command's exit.
func (a *app) testReport(r *scenario.Report, out testFormat, verbose bool) error {
	passed, failed := 0, 0
	for _, res := range r.Results {
		if res.Passed {
			passed++
		} else {
			failed++
		}
	}
	failed += len(r.Errors)
	if out == "junit" {
		if err := writeJUnit(a.stdout, r); err != nil {
			return err
		}
	} else if out == "json" {
		results := r.Results
		if results == nil {
			results = []*scenario.Result{}
		}
		if !verbose {
			for _, res := range results {
				if res.Passed {
					res.Log = ""
				}
			}
		}
		if err := writeJSON(a.stdout, map[string]any{"passed": passed, "failed": failed, "scenarios": results, "errors": r.Errors}); err != nil {
			return err
		}
	} else {
		for _, e := range r.Errors {
			fmt.Fprintf(a.stdout, "ERROR  %s\n", e)
		}
		for _, res := range r.Results {
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
