package spec

import (
	"path"
	"slices"
	"strings"
)

// CodeArgs returns the indices in argv of the arguments some program in
// the command runs as code: the script of a shell started with -c (see
// shellScript), the command of su or runuser -c, the string env -S
// splits into a command, the remote command ssh hands to a shell, and
// the program text of an interpreter (python -c, perl -e, node -e, ruby
// -e, php -r, awk). A placeholder there would run a value as code; an
// exec tool refuses it at validate and at run time.
func CodeArgs(argv []string) []int {
	var out []int
	if i := shellScript(argv); i >= 0 {
		out = append(out, i)
	}
	for i, a := range argv {
		var j int
		switch name := path.Base(a); {
		case name == "su" || name == "runuser":
			j = optionValue(argv, i, []string{"-c", "--command"}, []string{"-s", "--shell", "-g", "--group", "-G", "--supp-group", "-w", "--whitelist-environment"})
		case name == "env":
			j = optionValue(argv, i, []string{"-S", "--split-string"}, []string{"-u", "--unset", "-C", "--chdir"})
		case name == "ssh":
			if d := sshDestination(argv, i); d >= 0 {
				for k := d + 1; k < len(argv); k++ {
					out = append(out, k)
				}
			}
			continue
		case interpreter(name) != nil:
			j = optionValue(argv, i, interpreter(name), nil)
		case slices.Contains([]string{"awk", "gawk", "mawk", "nawk"}, name):
			j = awkProgram(argv, i)
		default:
			continue
		}
		if j > 0 {
			out = append(out, j)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// interpreter returns the flags that take program text for a language
// interpreter's name, or nil.
func interpreter(name string) []string {
	switch {
	case strings.HasPrefix(name, "python"), name == "pypy", name == "pypy3":
		return []string{"-c"}
	case strings.HasPrefix(name, "perl"), strings.HasPrefix(name, "ruby"), name == "lua", strings.HasPrefix(name, "lua5"):
		return []string{"-e", "-E"}
	case name == "node", name == "nodejs", name == "deno", name == "bun":
		return []string{"-e", "--eval", "-p", "--print"}
	case strings.HasPrefix(name, "php"):
		return []string{"-r"}
	case name == "Rscript", name == "osascript", name == "tclsh", name == "wish":
		return []string{"-e"}
	}
	return nil
}

// optionValue returns the index of the value of one of code's options
// for the program at argv[at]: --command CMD, --command=CMD, -c CMD, and
// single-letter flags grouped (perl -le CMD, python -Bc CMD) or with the
// value attached (-eCMD). Options in takes take a value and are skipped.
// 0 when none.
func optionValue(argv []string, at int, code, takes []string) int {
	var letters string
	for _, c := range code {
		if len(c) == 2 && c[0] == '-' {
			letters += c[1:]
		}
	}
	next := func(j int) int {
		if j+1 < len(argv) {
			return j + 1
		}
		return 0
	}
	for j := at + 1; j < len(argv); j++ {
		a := argv[j]
		switch {
		case strings.HasPrefix(a, "--"):
			for _, c := range code {
				if a == c {
					return next(j)
				}
				if strings.HasPrefix(c, "--") && strings.HasPrefix(a, c+"=") {
					return j
				}
			}
		case len(a) > 1 && a[0] == '-' && letters != "":
			if strings.IndexByte(letters, a[len(a)-1]) >= 0 {
				return next(j) // -c, -le, -Bc: the code is the next argument
			}
			if strings.ContainsAny(a[1:], letters) {
				return j // -eCODE
			}
		}
		if slices.Contains(takes, a) {
			j++
		}
	}
	return 0
}

// sshDestination returns the index of ssh's destination: its first
// argument that is not an option or an option's value; -1 when none.
func sshDestination(argv []string, at int) int {
	const withValue = "BbcDEeFIiJLlmOoPpQRSWw"
	for j := at + 1; j < len(argv); j++ {
		a := argv[j]
		if a == "--" {
			if j+1 < len(argv) {
				return j + 1
			}
			return -1
		}
		if len(a) < 2 || a[0] != '-' {
			return j
		}
		if last := a[len(a)-1]; len(a) == 2 && strings.IndexByte(withValue, last) >= 0 {
			j++
		}
	}
	return -1
}

// awkProgram returns the index of awk's program text: its first argument
// that is not an option or an option's value, unless -f names a program
// file; 0 when none.
func awkProgram(argv []string, at int) int {
	for j := at + 1; j < len(argv); j++ {
		switch a := argv[j]; {
		case a == "-f" || strings.HasPrefix(a, "--file"):
			return 0
		case a == "-v" || a == "-F":
			j++
		case a == "--":
			if j+1 < len(argv) {
				return j + 1
			}
			return 0
		case len(a) > 1 && a[0] == '-':
		default:
			return j
		}
	}
	return 0
}
