package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// scriptCmds are the commands agentctl adds to testscript scenarios, in
// agentctl test and in its own tests.
func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
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
