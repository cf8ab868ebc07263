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

// ShellScript returns the index in argv of the script a shell runs with
// -c, or -1 (see shellScript). An exec tool refuses to run a command
// whose script holds a placeholder, even from a run's stored spec that
// predates the rule validate applies.
func ShellScript(argv []string) int { return shellScript(argv) }

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

// shellPlaceholders refuses a placeholder in the script of a shell
// started with -c: once rendered, a value is shell code there, and one
// holding ; or $(...) runs commands of the model's choosing. Values reach
// a script safely as environment variables or positional arguments.
func (d *decoder) shellPlaceholders(f *file, cmd []*yaml.Node, where string) {
	argv := make([]string, len(cmd))
	for i, c := range cmd {
		if c != nil {
			argv[i] = c.Value
		}
	}
	i := shellScript(argv)
	if i < 0 || !tmpl.Has(argv[i]) {
		return
	}
	shell := argv[slices.IndexFunc(argv, func(a string) bool { return slices.Contains(shells, path.Base(a)) })]
	name, src := "VALUE", `${{ input.NAME }}`
	if t, err := tmpl.Parse(argv[i], actionVars, tmpl.AnyEnv); err == nil && len(t.Placeholders()) > 0 {
		src = t.Placeholders()[0]
		name = envNameFor(src)
		src = "${{ " + src + " }}"
	}
	d.errs.add(f.offsetPos(cmd[i], strings.Index(argv[i], "${{")),
		"%s[%d]: a placeholder in the script of %s -c is run as shell code (a value holding ; or $(...) would run commands): pass the value through env and quote it in the script, env: {%s: %q} and \"$%s\" (or use shell: true, which takes values only through env)",
		where, i, path.Base(shell), name, src, name)
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
