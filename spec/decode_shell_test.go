package spec

import (
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
  s:
    input: {type: object, properties: {db: {type: string}}}
    exec: {command: [sed, -e, 's/a/${{ input.db }}/', '${{ input.db }}']}
agents:
  a: {model: m, tools: [t], agents: [sub]}
  sub: {model: m}
`)}}
	_, err := Load(src)
	for _, want := range []string{"script of sh -c", "input.dbb: no such field", "exec.dir", "mcp.url", "no task", "the script of sed", "begins an argument where sed parses options"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load: %v, want %q", err, want)
		}
	}
	if _, err := Reload(src); err != nil {
		t.Errorf("Reload: %v", err)
	}
}
