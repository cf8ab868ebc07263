package spec

import "testing"

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
