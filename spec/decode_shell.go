package spec

import (
	"path"
	"slices"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/spec/tmpl"
)

// shells are the programs that run the argument after -c as shell code.
var shells = []string{"sh", "ash", "bash", "rbash", "dash", "zsh", "ksh", "ksh93", "mksh", "pdksh", "yash", "posh", "csh", "tcsh", "fish"}

// shellScript returns the index in argv of the script a shell runs with
// -c (sh -c, bash -eu -o pipefail -c, busybox sh -c, /usr/bin/env bash
// -c, sudo sh -c ...), or -1 when argv runs no such script. Whatever
// runs the shell, its name is found wherever it stands.
func shellScript(argv []string) int {
	i := slices.IndexFunc(argv, func(a string) bool { return slices.Contains(shells, path.Base(a)) })
	if i < 0 {
		return -1
	}
	sawC := false
	for j := i + 1; j < len(argv); j++ {
		a := argv[j]
		switch {
		case a == "--":
			if sawC && j+1 < len(argv) {
				return j + 1
			}
			return -1
		case a == "--rcfile" || a == "--init-file":
			j++ // takes a file
		case strings.HasPrefix(a, "--"):
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			for _, c := range a[1:] {
				switch c {
				case 'c':
					sawC = true
				case 'o', 'O':
					j++ // takes an option name: -o pipefail
				}
			}
		case sawC:
			return j
		default:
			return -1 // a script file, whose arguments are data
		}
	}
	return -1
}

// shellPlaceholders refuses a placeholder in an argument the command
// runs as code (CodeArgs): the script of a shell started with -c, su -c,
// env -S, ssh's remote command, python -c and the like. Once rendered, a
// value is code there, and one holding ; or $(...) runs commands of the
// model's choosing. Values reach such code safely as environment
// variables or, after a shell's script, as positional arguments.
func (d *decoder) shellPlaceholders(f *file, cmd []*yaml.Node, where string) {
	argv := make([]string, len(cmd))
	for i, c := range cmd {
		if c != nil {
			argv[i] = c.Value
		}
	}
	script := shellScript(argv)
	for _, i := range CodeArgs(argv) {
		if !tmpl.Has(argv[i]) {
			continue
		}
		name, src := "VALUE", `${{ input.NAME }}`
		if t, err := tmpl.Parse(argv[i], actionVars, tmpl.AnyEnv); err == nil && len(t.Placeholders()) > 0 {
			src = t.Placeholders()[0]
			name = envNameFor(src)
			src = "${{ " + src + " }}"
		}
		pos := f.offsetPos(cmd[i], strings.Index(argv[i], "${{"))
		if i == script {
			shell := argv[slices.IndexFunc(argv, func(a string) bool { return slices.Contains(shells, path.Base(a)) })]
			d.errs.add(pos, "%s[%d]: a placeholder in the script of %s -c is run as shell code (a value holding ; or $(...) would run commands): pass the value through env and quote it in the script, env: {%s: %q} and \"$%s\" (or use shell: true, which takes values only through env)",
				where, i, path.Base(shell), name, src, name)
			continue
		}
		if remoteCommand(argv, i) {
			d.errs.add(pos, "%s[%d]: ssh hands its remote command to a shell on the host, where a placeholder's value would run as code: run a fixed remote command instead (the remote shell sees none of the tool's env)",
				where, i)
			continue
		}
		d.errs.add(pos, "%s[%d]: a placeholder in an argument the command runs as code (su -c, env -S, ssh's remote command, python -c, perl -e, awk's program, ...) would run a value as code: pass the value through env, env: {%s: %q}, and read it from the environment there",
			where, i, name, src)
	}
}

// remoteCommand reports whether argv[i] is part of the command ssh hands
// to a shell on the remote host.
func remoteCommand(argv []string, i int) bool {
	for j, a := range argv[:i] {
		if path.Base(a) == "ssh" {
			d := sshDestination(argv, j)
			return d >= 0 && i > d
		}
	}
	return false
}

// envNameFor proposes an environment variable name for the value of an
// expression: its last name, in capitals (input.db is DB).
func envNameFor(src string) string {
	end := strings.LastIndexFunc(src, isNameRune) + 1
	start := strings.LastIndexFunc(src[:end], func(r rune) bool { return !isNameRune(r) }) + 1
	name := strings.ToUpper(src[start:end])
	if !isEnvName(name) {
		return "VALUE"
	}
	return name
}

func isNameRune(r rune) bool {
	return r == '_' || r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r))
}
