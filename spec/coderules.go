package spec

import (
	"path"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/spec/tmpl"
)

// shells are the programs that run the argument after -c as shell code.
var shells = []string{"sh", "ash", "bash", "rbash", "dash", "zsh", "ksh", "ksh93", "mksh", "pdksh", "yash", "posh", "csh", "tcsh", "fish"}

// shell is how the rules read a shell: options, then the script (after
// -c) or a script file, then positional parameters, which are data.
var shell = &program{opts: opts{values: "oO", long: []string{"--rcfile", "--init-file"}, posix: true}}

// A rule finds what a program's fields cannot say, among its words ws.
type rule func(s *scan, name string, at, end int, ws []word)

// customRule returns the rule of a program that needs one, or nil.
func customRule(name string) rule {
	switch name {
	case "ssh":
		return sshRemote
	case "find":
		return findExec
	case "git":
		return gitCommand
	case "git submodule", "git bisect":
		return gitRuns
	case "docker", "podman", "nerdctl":
		return containerCommand
	case "docker-compose":
		return composeCommand
	case "kubectl":
		return kubectlCommand
	case "make", "gmake":
		return makeAssignments
	case "flock":
		return flockCommand
	case "parallel":
		return parallelCommand
	case "chroot":
		return chrootRoot
	case "yq":
		return yqExpression
	}
	if slices.Contains(shells, name) {
		return shellRule
	}
	return nil
}

// shellOperand returns the index of the first operand of the shell at
// argv[at]: its script when c (it was given -c), else a script file
// unless stdin (-s); -1 when none.
func shellOperand(argv []string, at, end int) (j int, c, stdin bool) {
	for j = at + 1; j < end; j++ {
		a := argv[j]
		switch {
		case a == "--":
			if j+1 < end {
				return j + 1, c, stdin
			}
			return -1, c, stdin
		case a == "--rcfile" || a == "--init-file":
			j++ // takes a file
		case strings.HasPrefix(a, "--"):
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			for _, r := range a[1:] {
				switch r {
				case 'c':
					c = true
				case 's':
					stdin = true
				case 'o', 'O':
					j++ // takes an option name: -o pipefail
				}
			}
		default:
			return j, c, stdin
		}
	}
	return -1, c, stdin
}

// shellScript returns the index in argv of the script a shell runs with
// -c (sh -c, bash -eu -o pipefail -c, busybox sh -c, /usr/bin/env bash
// -c, sudo sh -c ...), or -1 when argv runs no such script. Whatever
// runs the shell, its name is found wherever it stands.
func shellScript(argv []string) int {
	i := slices.IndexFunc(argv, func(a string) bool { return slices.Contains(shells, path.Base(a)) })
	if i < 0 {
		return -1
	}
	if j, c, _ := shellOperand(argv, i, len(argv)); c {
		return j
	}
	return -1
}

// shellRule: the script of sh -c is shell code; a script file chosen by
// a value runs whatever it holds.
func shellRule(s *scan, name string, at, end int, _ []word) {
	j, c, stdin := shellOperand(s.argv, at, end)
	switch {
	case j < 0:
	case c:
		s.addKind(j, CodeArg{What: "the script of " + name + " -c", Fix: fixEnv, kind: kindShell})
	case !stdin:
		s.add(j, "the script file "+name+" runs", fixProgram)
	}
}

// sshRemote: ssh hands what follows its destination to a shell on the
// host.
func sshRemote(s *scan, _ string, _, _ int, ws []word) {
	ops := operands(ws)
	for k := 1; k < len(ops); k++ {
		s.addKind(ops[k], CodeArg{What: "ssh's remote command", Fix: fixFixed, kind: kindSSH})
	}
}

// findExec: find -exec, -execdir, -ok and -okdir run the command that
// follows, up to ; or {} +.
func findExec(s *scan, _ string, at, end int, _ []word) {
	for j := at + 1; j < end; j++ {
		if !slices.Contains([]string{"-exec", "-execdir", "-ok", "-okdir"}, s.argv[j]) {
			continue
		}
		k := j + 1
		for k < end && s.argv[k] != ";" && (s.argv[k] != "+" || s.argv[k-1] != "{}") {
			k++
		}
		s.run("find "+s.argv[j], j+1, k)
		j = k
	}
}

// chrootRoot: the program chroot runs comes from its new root.
func chrootRoot(s *scan, _ string, _, _ int, ws []word) {
	if ops := operands(ws); len(ops) > 0 {
		s.add(ops[0], "the root chroot runs its program from", fixFixed)
	}
}

// flockCommand: flock FILE -c CMD runs CMD in a shell; flock FILE CMD
// runs CMD.
func flockCommand(s *scan, name string, _, end int, ws []word) {
	ops := operands(ws)
	switch {
	case len(ops) < 2:
	case s.argv[ops[1]] == "-c" || s.argv[ops[1]] == "--command":
		if len(ops) > 2 {
			s.add(ops[2], "the command of flock -c (run by a shell)", fixEnv)
		}
	default:
		s.run(name, ops[1], end)
	}
}

// parallelCommand: GNU parallel runs its command line in a shell; the
// arguments after ::: are its inputs, quoted as data.
func parallelCommand(s *scan, _ string, _, _ int, ws []word) {
	for _, i := range operands(ws) {
		if strings.HasPrefix(s.argv[i], ":::") {
			return
		}
		s.add(i, "the command of parallel (run by a shell)", fixEnv)
	}
}

// yqExpression: yq eval EXPR reads its expression after the subcommand.
func yqExpression(s *scan, _ string, _, _ int, ws []word) {
	ops := operands(ws)
	if len(ops) > 1 && slices.Contains([]string{"eval", "e", "eval-all", "ea"}, s.argv[ops[0]]) {
		s.add(ops[1], programs["yq"].what, fixJq)
	}
}

// makeAssignments: make expands $(shell ...) in a variable assignment,
// and an argument that begins with a value could be one (X=$(shell id)).
func makeAssignments(s *scan, _ string, _, _ int, ws []word) {
	for _, i := range operands(ws) {
		a := s.argv[i]
		switch k := strings.Index(a, "${{"); {
		case k == 0:
			s.add(i, "an argument of make, which a value could make a variable assignment (X=$(shell ...))", fixMake)
		case k > 0 && strings.Contains(a[:k], "="):
			s.add(i, "a make variable assignment (make expands $(shell ...) in it)", fixMake)
		}
	}
}

// kubectlCommand: kubectl exec, run and debug run the command after --
// in a container (kubectl exec POD COMMAND without --, deprecated, too);
// --image and --overrides choose what runs.
func kubectlCommand(s *scan, _ string, _, end int, ws []word) {
	for _, i := range valuesOf(ws, []string{"--image", "--overrides"}) {
		s.add(i, "the image or pod spec kubectl runs", fixFixed)
	}
	var ops []int
	for _, w := range ws {
		if w.kind == kOperand && w.opts {
			ops = append(ops, w.i)
		}
	}
	verb := slices.IndexFunc(ops, func(i int) bool { return slices.Contains([]string{"exec", "run", "debug"}, s.argv[i]) })
	if verb < 0 {
		return
	}
	name := "kubectl " + s.argv[ops[verb]]
	if k := slices.IndexFunc(ws, func(w word) bool { return w.kind == kEnd }); k >= 0 {
		s.run(name, ws[k].i+1, end)
	} else if name == "kubectl exec" && verb+2 < len(ops) {
		s.run(name, ops[verb+2], end)
	}
}

// gitCommand: git's subcommand, chosen by a value, could be an alias or
// any command; some subcommands take commands in options.
func gitCommand(s *scan, _ string, _, end int, ws []word) {
	ops := operands(ws)
	if len(ops) == 0 {
		return
	}
	sub := ops[0]
	if tmpl.Has(s.argv[sub]) {
		if s.nest {
			s.add(sub, "the git command (a value could name an alias, or any git command)", fixProgram)
		}
		return
	}
	name := "git " + s.argv[sub]
	p := gitSub(s.argv[sub])
	ws = p.words(s.argv, sub, end)
	if s.nest {
		s.options(name, p, ws)
	}
	p.apply(s, name, sub, end, ws)
}

// gitSub describes a git subcommand's options that run commands.
func gitSub(name string) *program {
	switch name {
	case "clone":
		return &program{opts: opts{values: "uocbj", long: []string{"--upload-pack", "--origin", "--config", "--branch", "--template", "--separate-git-dir", "--reference", "--depth", "--jobs", "--filter"}},
			code: []string{"-u", "--upload-pack", "-c", "--config", "--template"}, what: "an option of git clone that runs a command (--upload-pack, -c, --template)", fix: fixFixed}
	case "fetch", "pull", "ls-remote", "archive", "push", "submodule":
		return &program{opts: opts{long: []string{"--upload-pack", "--receive-pack", "--exec", "--remote"}},
			code: []string{"--upload-pack", "--receive-pack", "--exec"}, what: "an option of git " + name + " that runs a command (--upload-pack, --receive-pack, --exec)", fix: fixFixed}
	case "rebase":
		return &program{opts: opts{values: "xsXo", long: []string{"--exec", "--onto", "--strategy", "--strategy-option"}},
			code: []string{"-x", "--exec"}, what: "the command of git rebase --exec (run by a shell)", fix: fixEnv}
	case "filter-branch":
		filters := []string{"--env-filter", "--tree-filter", "--index-filter", "--parent-filter", "--msg-filter", "--commit-filter", "--tag-name-filter", "--setup"}
		return &program{opts: opts{values: "d", long: append(filters, "--subdirectory-filter", "--original")}, code: filters, what: "a filter of git filter-branch (run by a shell)", fix: fixEnv}
	case "config":
		return &program{args: allCode, what: "git configuration (core.pager, core.sshCommand, alias.x=!cmd run commands)", fix: fixFixed}
	case "difftool", "mergetool":
		return &program{opts: opts{values: "xt", long: []string{"--extcmd", "--tool"}}, code: []string{"-x", "--extcmd"}, what: "the command of git " + name + " --extcmd", fix: fixFixed}
	}
	return &program{}
}

// gitRuns: git submodule foreach runs a shell command; git bisect run
// runs a command.
func gitRuns(s *scan, name string, _, end int, ws []word) {
	ops := operands(ws)
	if len(ops) < 2 {
		return
	}
	switch s.argv[ops[0]] {
	case "foreach":
		for _, i := range ops[1:] {
			s.add(i, "the command of git submodule foreach (run by a shell)", fixEnv)
		}
	case "run":
		s.run(name+" run", ops[1], end)
	}
}

// Options of docker run and docker exec (podman's and nerdctl's alike)
// that take a value.
var (
	containerRun = &program{opts: opts{values: "aceEhlmpuvw", long: []string{
		"--add-host", "--annotation", "--attach", "--blkio-weight", "--cap-add", "--cap-drop", "--cgroup-parent", "--cgroupns", "--cidfile",
		"--cpu-period", "--cpu-quota", "--cpu-shares", "--cpus", "--cpuset-cpus", "--cpuset-mems", "--detach-keys", "--device", "--dns",
		"--dns-option", "--dns-search", "--domainname", "--entrypoint", "--env", "--env-file", "--expose", "--gpus", "--group-add",
		"--health-cmd", "--health-interval", "--health-retries", "--health-start-period", "--health-timeout", "--hostname", "--ip", "--ip6",
		"--ipc", "--label", "--label-file", "--link", "--log-driver", "--log-opt", "--mac-address", "--memory", "--memory-reservation",
		"--memory-swap", "--mount", "--name", "--network", "--network-alias", "--pid", "--pids-limit", "--platform", "--publish", "--pull",
		"--restart", "--runtime", "--security-opt", "--shm-size", "--stop-signal", "--stop-timeout", "--storage-opt", "--sysctl", "--tmpfs",
		"--ulimit", "--user", "--userns", "--uts", "--volume", "--volumes-from", "--workdir", "--index",
	}, posix: true}, code: []string{"--entrypoint", "--health-cmd"}, what: "the entrypoint or health command of a container", fix: fixFixed}
	containerExec = &program{opts: opts{values: "euw", long: []string{"--env", "--env-file", "--user", "--workdir", "--detach-keys", "--index"}, posix: true}}
)

// containerCommand: docker run runs an image and a command in it; docker
// exec runs a command in a container; docker compose alike.
func containerCommand(s *scan, name string, _, end int, ws []word) {
	ops := operands(ws)
	if !s.nest || len(ops) == 0 {
		return
	}
	sub := ops[0]
	verb := s.argv[sub]
	if tmpl.Has(verb) {
		s.add(sub, "the "+name+" command", fixFixed)
		return
	}
	label := name + " " + verb
	switch verb {
	case "container":
		containerCommand(s, name, sub, end, containerLike.words(s.argv, sub, end))
	case "compose":
		ws = composeLike.words(s.argv, sub, end)
		s.options(label, composeLike, ws)
		composeCommand(s, label, sub, end, ws)
	case "run", "create":
		s.container(label, sub, end, containerRun, true)
	case "exec":
		s.container(label, sub, end, containerExec, false)
	}
}

// composeCommand: docker compose run and exec run a command in a
// service's container.
func composeCommand(s *scan, name string, _, end int, ws []word) {
	ops := operands(ws)
	if !s.nest || len(ops) == 0 {
		return
	}
	if verb := s.argv[ops[0]]; verb == "run" || verb == "exec" {
		s.container(name+" "+verb, ops[0], end, containerRun, false)
	}
}

// container reads docker run or exec at argv[at]: options, the image
// (code: it chooses what runs) or the container, then the command.
func (s *scan) container(label string, at, end int, p *program, image bool) {
	ws := p.words(s.argv, at, end)
	s.options(label, p, ws)
	p.apply(s, label, at, end, ws)
	ops := operands(ws)
	if len(ops) > 0 && image {
		s.add(ops[0], "the image "+label+" starts", fixFixed)
	}
	if len(ops) > 1 {
		s.run(label, ops[1], end)
	}
}
