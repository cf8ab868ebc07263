package spec

import (
	"slices"
	"strings"
	"testing"
)

// argvOf splits a command written with spaces between arguments: @ is
// a placeholder and ~ a space inside an argument.
func argvOf(cmd string) []string {
	argv := strings.Fields(cmd)
	for i, a := range argv {
		argv[i] = strings.NewReplacer("@", "${{ input.x }}", "~", " ").Replace(a)
	}
	return argv
}

func codeIndices(argv []string) []int {
	var out []int
	for _, c := range CodeArgs(argv) {
		out = append(out, c.Index)
	}
	return out
}

// codeForms are commands that run a placeholder's value as code, each
// with the index of that argument. Every form is refused.
var codeForms = []struct {
	cmd  string
	want int
}{
	// Shells, su, env -S, ssh (the rule before this table).
	{"sh -c @", 2}, {"bash -euo pipefail -c echo~@", 4}, {"sh @", 1}, {"busybox sh -c @", 3},
	{"su root -c @", 3}, {"runuser -u app -- @", 4}, {"su -s @ root", 2},
	{"env -S @", 2}, {"env --split-string=@", 1}, {"env FOO=1 @", 2}, {"/usr/bin/env @ -x", 1},
	{"ssh host echo~@", 2}, {"ssh -p 22 host ls @", 5}, {"ssh -o ProxyCommand=@ host", 2}, {"ssh -oProxyCommand=@ host", 1}, {"scp -S @ a b", 2},
	// Interpreters: program text, module, script.
	{"python3 -c @", 2}, {"python3.12 @", 1}, {"python3 -m @", 2}, {"python3 -Bc @", 2}, {"perl -le @", 2}, {"perl -MFoo=@ -e 1", 1},
	{"node -e @", 2}, {"node --eval=@", 1}, {"node -r @ app.js", 2}, {"ruby -e@", 1}, {"php -r @", 2}, {"Rscript -e @", 2},
	{"awk {print~\"@\"} file", 1}, {"gawk --source=@", 1}, {"awk -f @ file", 2}, {"expect -c @", 2}, {"pwsh -Command @", 2}, {"dc -e @", 2}, {"m4 -D x=@", 2}, {"gnuplot -e @", 2},
	// sed, jq, yq.
	{"sed -e s/a/@/ file", 2}, {"sed s/a/@/ file", 1}, {"sed -n --expression=@ file", 2}, {"sed -i -e @ file", 3}, {"sed -ie @ file", 2}, {"sed -f @ file", 2},
	{"jq @ file", 1}, {"jq -r .a|@", 2}, {"jq --arg v 1 @", 4}, {"yq eval @ f.yaml", 2},
	// Programs that hand a command line to a shell or run a command.
	{"script -qec @ /dev/null", 2}, {"script --command=@", 1}, {"watch -n 5 @", 3}, {"watch -x @", 2}, {"tmux new-session -d @", 3}, {"screen -dmS x @", 3},
	{"parallel @ ::: a b", 1}, {"parallel echo @ ::: a", 2}, {"xargs @", 1}, {"xargs -n1 -I{} @ {}", 3}, {"sg wheel @", 2},
	{"find . -exec @ {} ;", 3}, {"find . -name x -exec sh -c @ ; -print", 7}, {"find . -execdir @ {} +", 3},
	// Wrappers: the program they run.
	{"timeout 10 @", 2}, {"timeout -s KILL 10 @", 4}, {"nice -n 5 @", 3}, {"nohup @", 1}, {"stdbuf -oL @", 2}, {"setsid @", 1},
	{"chroot @ /bin/ls", 1}, {"chroot /srv @", 2}, {"sudo @", 1}, {"sudo -u app @", 3}, {"sudo FOO=1 @", 2}, {"doas @", 1},
	{"flock /tmp/l @", 2}, {"flock /tmp/l -c @", 3}, {"ionice -c 3 @", 3}, {"taskset 0x1 @", 2}, {"unshare -n @", 2}, {"nsenter -t 1 -m @", 4},
	{"strace -o f @", 3}, {"ltrace @", 1}, {"time @", 1}, {"systemd-run @", 1}, {"systemd-run -p ExecStartPre=@ /bin/true", 2}, {"@ --version", 0},
	// Editors and pagers.
	{"vim -c @ f", 2}, {"vim +@ f", 1}, {"vim --cmd @", 2}, {"nvim -S @", 2}, {"emacs --eval @", 2}, {"emacs --eval=@", 1}, {"emacs -batch -eval @", 3},
	{"nano -s @ f", 2}, {"less +@ f", 1}, {"man -P @ ls", 2},
	// make and git.
	{"make --eval=@", 1}, {"make -E @", 2}, {"make X=@", 1}, {"make @", 1}, {"make -f @ all", 2},
	{"git -c @ log", 2}, {"git -c core.pager=@ log", 2}, {"git --config-env=core.pager=@ log", 1}, {"git @", 1}, {"git -C /repo @ x", 3},
	{"git clone -u @ url", 3}, {"git clone --upload-pack=@ url", 2}, {"git fetch --upload-pack @ origin", 3}, {"git rebase -x @ main", 3},
	{"git submodule foreach @", 3}, {"git bisect run @", 3}, {"git config core.pager @", 3}, {"git filter-branch --tree-filter @ HEAD", 3},
	// Database shells.
	{"psql -c @", 2}, {"psql --command=@ db", 1}, {"psql -f @", 2}, {"mysql -e @", 2}, {"mariadb --execute=@", 1}, {"mysql --init-command=@ db", 1},
	{"sqlite3 db.sqlite @", 2}, {"sqlite3 -cmd @ db.sqlite", 2}, {"duckdb db -c @", 3}, {"redis-cli -h h GET @", 4}, {"mongosh --eval @", 2}, {"mongosh mongodb://h @", 2},
	{"clickhouse-client --query=@", 1}, {"cqlsh -e @", 2},
	// Containers.
	{"kubectl exec pod -- @", 4}, {"kubectl exec -n ns pod -- sh -c @", 8}, {"kubectl exec pod @", 3}, {"kubectl run x --image=@", 3}, {"kubectl debug -it pod --image @", 5},
	{"docker run @", 2}, {"docker run --rm img @", 4}, {"docker run --entrypoint @ img", 3}, {"docker exec -u root c @", 5}, {"docker exec c sh -c @", 5},
	{"docker compose exec svc @", 4}, {"docker-compose run --rm svc @", 4}, {"podman run -it img @", 4}, {"docker container run img @", 4},
	// Copies, archives, downloads.
	{"rsync -e @ a b", 2}, {"rsync --rsh=@ a b", 1}, {"rsync --rsync-path=@ a h:b", 1}, {"tar --to-command=@ -xf a", 1}, {"tar -I @ -cf a d", 2},
	{"tar --checkpoint-action=exec=@ -cf a d", 1}, {"zip -TT @ a.zip f", 2}, {"wget -e @ url", 2},
	// Debuggers.
	{"gdb -ex @ prog", 2}, {"gdb -batch @", 2}, {"lldb -o @", 2},
	// A known program behind a wrapper the rule does not know.
	{"mywrapper --flag sh -c @", 4}, {"mywrapper python3 -c @", 3},
}

// dataForms are commands whose placeholders are data, not code: none is
// refused as code.
var dataForms = []string{
	"sh -c echo~\"$1\" sh @", "sh -c script @", "bash -s @", "python3 script.py @", "python3 -c code @", "awk {print} @",
	"awk -v x=@ {print~x}", "sed -e s/a/b/ @", "sed s/a/b/ -- @", "jq --arg x @ .x", "jq -n --args $ARGS @", "psql -v x=@ -c select~:'x'",
	"git log --grep=@", "git commit -m @", "git -C @ status", "docker run -e X=@ img", "docker run img ls @", "kubectl exec pod -- ls @",
	"kubectl get pod @", "timeout 10 ls @", "ssh host", "find . -name @", "make deploy-@", "env X=@ cmd", "sudo X=@ cmd", "echo @",
	"printf %s @", "tar -cf @ dir", "rsync -a src/ host:@", "vim -- @", "xargs -I{} cp {} @", "systemctl restart @", "curl -o @ url",
	"echo sh -c @", "sqlite3 @", "parallel echo ::: @", "watch -n @ date", "flock @ true", "mysql -D @", "redis-cli -h @ PING",
}

func TestCodeForms(t *testing.T) {
	for _, c := range codeForms {
		if got := codeIndices(argvOf(c.cmd)); !slices.Equal(got, []int{c.want}) {
			t.Errorf("CodeArgs(%s) = %v, want [%d]", c.cmd, got, c.want)
		}
	}
	for _, cmd := range dataForms {
		if got := CodeArgs(argvOf(cmd)); len(got) > 0 {
			t.Errorf("CodeArgs(%s) = %+v, want none", cmd, got)
		}
	}
	t.Logf("%d code forms refused, %d data forms allowed", len(codeForms), len(dataForms))
}

// A literal argument is never code, wherever it stands.
func TestCodeArgsLiteral(t *testing.T) {
	for _, c := range codeForms {
		argv := strings.Fields(strings.ReplaceAll(c.cmd, "@", "value"))
		if got := CodeArgs(argv); len(got) > 0 {
			t.Errorf("CodeArgs(%q) = %+v, want none", argv, got)
		}
	}
}

// FuzzArgv: the rules never panic on a command, and what they report
// holds a placeholder where they say.
func FuzzArgv(f *testing.F) {
	for _, c := range codeForms {
		f.Add(c.cmd)
	}
	for _, c := range dataForms {
		f.Add(c)
	}
	f.Add("tar -@f @ docker run -- kubectl exec -- find -exec ; +")
	f.Fuzz(func(t *testing.T, cmd string) {
		argv := argvOf(cmd)
		for _, c := range CodeArgs(argv) {
			if !strings.Contains(argv[c.Index], "${{") {
				t.Errorf("CodeArgs(%q): %d holds no placeholder", argv, c.Index)
			}
		}
		for _, o := range OptionArgs(argv) {
			if !strings.HasPrefix(strings.TrimLeft(argv[o.Index], "-"), "${{") {
				t.Errorf("OptionArgs(%q): %d begins with no placeholder", argv, o.Index)
			}
		}
		OptionChecks(argv, nil)
	})
}
