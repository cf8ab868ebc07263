package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentctl/agentctl/internal/scenario"
)

// TestDocConsole runs every ```console block of README.md and docs/*.md
// as it stands: each "$ command" in a shell, in a directory where
// examples/ is the project's, its output held against the lines the
// block shows after it (none shown: it must exit 0, unless the next
// command is echo $?). A doc that lies fails.
// Run ids the doc shows stand for those the run prints (matched by
// place, then replaced in later commands by the same length of the real
// one), times match times, "…" matches anything, and /tmp/ is the
// script's own directory. Illustrations that cannot run here (a server's
// host, another user, a terminal) are ```text blocks.
func TestDocConsole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files, _ := filepath.Glob("../../docs/*.md")
	files = append([]string{"../../README.md"}, files...)
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range consoleBlocks(string(data)) {
			n++
			name := fmt.Sprintf("%s_%d.txtar", strings.TrimSuffix(filepath.Base(f), ".md"), i+1)
			script := "exec ln -s $EXAMPLES/.. examples\ndoc block.txt\n-- block.txt --\n" + b
			if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no console blocks found")
	}
	examples, err := filepath.Abs("../../examples/agents")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("EXAMPLES", examples)
			env.Setenv("GORACE", os.Getenv("GORACE"))
			return scenario.Setup(env)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"doc": docCmd},
	})
}

// consoleBlocks returns the bodies of the ```console blocks of a
// Markdown text.
func consoleBlocks(md string) []string {
	var out []string
	var cur *strings.Builder
	for _, line := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.TrimSpace(line) == "```console":
			cur = &strings.Builder{}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return out
}

// docStep is one command of a block and the output it shows.
type docStep struct {
	cmd  string
	want []string
}

// docCmd runs a console block: doc FILE.
func docCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: doc FILE")
	}
	var steps []docStep
	for _, line := range strings.Split(ts.ReadFile(args[0]), "\n") {
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			steps = append(steps, docStep{cmd: cmd})
		} else if len(steps) > 0 && strings.TrimSpace(line) != "" {
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, line)
		}
	}
	ids, env, code := &docIDs{}, map[string]string{}, 0
	for i, s := range steps {
		cmd := strings.ReplaceAll(mapIDs(s.cmd, ids), "/tmp/", ts.Getenv("WORK")+"/")
		if name, val, ok := strings.Cut(strings.TrimPrefix(cmd, "export "), "="); ok && strings.HasPrefix(cmd, "export ") {
			env[name] = strings.Fields(val)[0]
			continue
		}
		var got string
		if strings.HasPrefix(cmd, "echo $?") {
			got = strconv.Itoa(code)
		} else {
			got, code = docRun(ts, cmd, env)
		}
		ts.Logf("$ %s\n%s", cmd, got)
		checked := i+1 < len(steps) && strings.HasPrefix(steps[i+1].cmd, "echo $?")
		if len(s.want) == 0 && code != 0 && !checked {
			ts.Fatalf("%s: exit %d, and the doc shows neither its output nor its exit code:\n%s", s.cmd, code, got)
		}
		if len(s.want) > 0 {
			if err := docMatch(s.want, strings.Split(strings.TrimRight(got, "\n"), "\n"), ids); err != nil {
				ts.Fatalf("%s: %v", s.cmd, err)
			}
		}
	}
}

// docRun runs cmd in a shell in the script's directory, with its
// environment and env, and returns what it printed, as a terminal shows
// both streams, and its exit code.
func docRun(ts *testscript.TestScript, cmd string, env map[string]string) (string, int) {
	c := exec.Command("sh", "-c", cmd)
	c.Dir = ts.Getenv("WORK")
	for _, k := range []string{"PATH", "HOME", "WORK", "AGENTCTL_DB", "XDG_STATE_HOME", "TMPDIR", "GORACE"} {
		c.Env = append(c.Env, k+"="+ts.Getenv(k))
	}
	for k, v := range env {
		c.Env = append(c.Env, k+"="+v)
	}
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	case err != nil:
		ts.Fatalf("%s: %v", cmd, err)
	}
	return out.String(), 0
}

// docID is a run id, or a prefix of one of at least 6 characters.
var docID = regexp.MustCompile(`\b01[0-9A-HJKMNP-TV-Z]{4,24}\b`)

// docTime is an RFC 3339 time.
var docTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)`)

// docIDs maps the run ids a doc shows to the real ones, in the order
// they were met.
type docIDs struct{ shown, real []string }

// learn records that the doc's id shown stands for real, unless known.
func (m *docIDs) learn(shown, real string) {
	if _, ok := m.find(shown); !ok {
		m.shown, m.real = append(m.shown, shown), append(m.real, real)
	}
}

// find returns the real id of the first id met that the doc's id (or
// prefix) id begins.
func (m *docIDs) find(id string) (string, bool) {
	for i, s := range m.shown {
		if strings.HasPrefix(s, id) || strings.HasPrefix(id, s) {
			return m.real[i], true
		}
	}
	return "", false
}

// mapIDs replaces each run id the doc shows with the whole real one it
// stands for, when known.
func mapIDs(s string, ids *docIDs) string {
	return docID.ReplaceAllStringFunc(s, func(id string) string {
		if real, ok := ids.find(id); ok {
			// The whole id: runs made in the same millisecond share a
			// longer prefix than the doc's.
			return real
		}
		return id
	})
}

// docMatch holds the lines got against the lines the doc shows, learning
// which real run id each shown one stands for.
func docMatch(want, got []string, ids *docIDs) error {
	if len(got) != len(want) {
		return fmt.Errorf("the doc shows %d lines, the command printed %d:\n%s", len(want), len(got), strings.Join(got, "\n"))
	}
	for i, w := range want {
		g := strings.TrimRight(got[i], " ")
		shown, real := docID.FindAllString(w, -1), docID.FindAllString(g, -1)
		for j := range min(len(shown), len(real)) {
			ids.learn(shown[j], real[j])
		}
		w = strings.TrimRight(w, " ")
		if !docLine(w, ids).MatchString(g) {
			return fmt.Errorf("line %d: the doc shows\n  %s\nthe command printed\n  %s", i+1, w, g)
		}
	}
	return nil
}

// docLine is the pattern of a line a doc shows: a run id the real one
// it stands for (a short id as long as the real hint makes it, 10
// characters or more), a time any time, "…" anything.
func docLine(w string, ids *docIDs) *regexp.Regexp {
	var pat strings.Builder
	last := 0
	for _, loc := range docID.FindAllStringIndex(w, -1) {
		pat.WriteString(docText(w[last:loc[0]]))
		id := w[loc[0]:loc[1]]
		if real, ok := ids.find(id); ok && len(real) >= len(id) {
			n := min(len(id), 10)
			pat.WriteString(regexp.QuoteMeta(real[:n]) + "[0-9A-HJKMNP-TV-Z]{0," + strconv.Itoa(len(real)-n) + "}")
		} else {
			pat.WriteString(regexp.QuoteMeta(id))
		}
		last = loc[1]
	}
	pat.WriteString(docText(w[last:]))
	return regexp.MustCompile("^" + pat.String() + "$")
}

// docText is the pattern of text without run ids: times match any
// time, "…" anything.
func docText(s string) string {
	pat := regexp.QuoteMeta(docTime.ReplaceAllString(s, "\x00"))
	pat = strings.ReplaceAll(pat, "\x00", docTime.String())
	return strings.ReplaceAll(pat, "…", ".*")
}
