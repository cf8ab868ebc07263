package spec

import (
	"slices"
	"strings"
	"testing"
)

func TestShellScript(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want int
	}{
		{[]string{"sh", "-c", "x"}, 2},
		{[]string{"/bin/bash", "-euc", "x", "name", "arg"}, 2},
		{[]string{"bash", "-e", "-o", "pipefail", "-c", "x"}, 5},
		{[]string{"bash", "-c", "--", "x"}, 3},
		{[]string{"bash", "--norc", "--rcfile", "f", "-c", "x"}, 5},
		{[]string{"/usr/bin/env", "FOO=1", "dash", "-c", "x"}, 4},
		{[]string{"busybox", "sh", "-c", "x"}, 3},
		{[]string{"sudo", "-u", "app", "zsh", "-lc", "x"}, 5},
		{[]string{"sh", "script.sh", "-c", "x"}, -1}, // a script file: -c is its argument
		{[]string{"sh", "-e"}, -1},
		{[]string{"sh", "-c"}, -1},
		{[]string{"echo", "-c", "x"}, -1},
		{[]string{"python3", "-c", "x"}, -1},
	} {
		if got := shellScript(c.argv); got != c.want {
			t.Errorf("shellScript(%q) = %d, want %d", c.argv, got, c.want)
		}
	}
	for src, want := range map[string]string{"input.db": "DB", `input["db_name"]`: "DB_NAME", "env.TOKEN": "TOKEN", "input.a.b2 + 1": "VALUE", "input.x + run.id": "ID", "1": "VALUE"} {
		if got := envNameFor(src); got != want {
			t.Errorf("envNameFor(%q) = %s, want %s", src, got, want)
		}
	}
}

// A snapshot accepted before these checks still loads, so that its runs
// can be decided; Load refuses each form.
func TestSnapshotKeepsOlderForms(t *testing.T) {
	src := []Source{{Name: "spec.yaml", Data: []byte(`
version: 1
models:
  m: {provider: scripted, turns: [{toolCalls: [{tool: sub, args: {tsk: x}}]}, {text: done}]}
tools:
  t:
    input: {type: object, properties: {db: {type: string}}}
    exec: {command: [sh, -c, 'echo ${{ input.db }} ${{ input.dbb }}'], dir: '/srv/${{ input.db }}'}
  u: {mcp: {url: 'https://x.example/${{ env.T }}'}}
agents:
  a: {model: m, tools: [t], agents: [sub]}
  sub: {model: m}
`)}}
	_, err := Load(src)
	for _, want := range []string{"script of sh -c", "input.dbb: no such field", "exec.dir", "mcp.url", "no task"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load: %v, want %q", err, want)
		}
	}
	if _, err := Reload(src); err != nil {
		t.Errorf("Reload: %v", err)
	}
}

// TestCodeArgs: the arguments a command runs as code, whatever runs it.
func TestCodeArgs(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want []int
	}{
		{[]string{"sh", "-c", "x", "sh", "data"}, []int{2}},
		{[]string{"su", "root", "-c", "x"}, []int{3}},
		{[]string{"runuser", "-u", "app", "--command=x"}, []int{3}},
		{[]string{"env", "-S", `sh -c "x"`}, []int{2}},
		{[]string{"/usr/bin/env", "--split-string=sh -c x"}, []int{1}},
		{[]string{"ssh", "-p", "22", "host", "echo", "x"}, []int{4, 5}},
		{[]string{"ssh", "host"}, nil},
		{[]string{"python3", "-c", "x", "arg"}, []int{2}},
		{[]string{"perl", "-e", "x"}, []int{2}},
		{[]string{"node", "--eval", "x"}, []int{2}},
		{[]string{"php", "-r", "x"}, []int{2}},
		{[]string{"awk", "-F", ",", "{print $1}", "file"}, []int{3}},
		{[]string{"awk", "-f", "prog.awk", "file"}, nil},
		{[]string{"python3", "script.py", "x"}, nil},
		{[]string{"curl", "-d", "x", "http://h"}, nil},
		{[]string{"echo", "-c", "x"}, nil},
	} {
		if got := CodeArgs(c.argv); !slices.Equal(got, c.want) {
			t.Errorf("CodeArgs(%q) = %v, want %v", c.argv, got, c.want)
		}
	}
}

// Grouped single-letter flags still name the code: perl -le, python -Bc,
// node -pe, and the code attached (-ecode).
func TestCodeArgsGrouped(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want []int
	}{
		{[]string{"perl", "-le", "x"}, []int{2}},
		{[]string{"python3", "-Bc", "x"}, []int{2}},
		{[]string{"node", "-pe", "x"}, []int{2}},
		{[]string{"ruby", "-ex"}, []int{1}},
		{[]string{"python3", "-u", "script.py", "x"}, nil},
	} {
		if got := CodeArgs(c.argv); !slices.Equal(got, c.want) {
			t.Errorf("CodeArgs(%q) = %v, want %v", c.argv, got, c.want)
		}
	}
}
