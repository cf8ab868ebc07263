package spec

import (
	"path"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/spec/tmpl"
)

// CodeArg is an argument a command runs as code: a script, a program's
// text, a command line a program hands to a shell, or the program a
// command or a wrapper (sudo, timeout, xargs ...) runs. A placeholder
// there would run a value of the model's choosing as code.
type CodeArg struct {
	Index int
	What  string // what the argument is, for messages: "the script of sed"
	// Fix says how to pass a value instead; {NAME} and {SRC} stand for
	// an environment variable's name and the placeholder.
	Fix  string
	kind codeKind
}

// codeKind tells the arguments whose message says more.
type codeKind uint8

const (
	kindCode  codeKind = iota
	kindShell          // the script of sh -c
	kindSSH            // ssh's remote command
)

// OptionArg is an argument, beginning with a placeholder, where a
// program parses options: a value such as --output=/etc/x or -e would
// be an option there.
type OptionArg struct {
	Index   int
	Program string // the program that parses it
	Bad     string // the first characters that make an option: "-", or "-+" for vi and less (+cmd)
	// Dashes: the argument is dashes and then a placeholder (-${{ x }}),
	// so the value names the option itself.
	Dashes bool
}

// CodeArgs returns the arguments of argv that some program in it runs as
// code, in order, one per index. It follows the command from argv[0]
// through wrappers (sudo, timeout, xargs, find -exec, docker run ...)
// to the program they run, and finds a known program's code wherever
// its name stands (a shell after an unknown wrapper). See programs for
// the programs it knows.
func CodeArgs(argv []string) []CodeArg {
	return analyze(argv).code
}

// OptionArgs returns the arguments of argv that begin with a placeholder
// where the program reading them parses options: before a literal --
// (and for programs that stop at their first operand, up to it), except
// the value of an option a known program reads as its value (jq --arg
// NAME VALUE, sudo -u USER). The program a wrapper runs parses its own
// options, after the wrapper's.
func OptionArgs(argv []string) []OptionArg {
	return analyze(argv).opts
}

// scan collects what analyze finds.
type scan struct {
	argv  []string
	code  []CodeArg
	opts  []OptionArg
	heads []int        // the indices of the programs the command runs
	owner []int        // for each argument, the head of the innermost command that reads it; -1: none
	known map[int]bool // the heads of programs the rules know
	nest  bool         // follow wrappers to the commands they run
}

// analyze follows the command from argv[0], then looks for known
// programs among the arguments of programs it does not know (a shell
// after an unknown wrapper).
func analyze(argv []string) *scan {
	s := &scan{argv: argv, nest: true, owner: make([]int, len(argv)), known: map[int]bool{}}
	if len(argv) == 0 {
		return s
	}
	for j := range s.owner {
		s.owner[j] = -1
	}
	s.command(0, len(argv))
	s.nest = false
	for j := 1; j < len(argv); j++ {
		if o := s.owner[j]; !slices.Contains(s.heads, j) && (o < 0 || !s.known[o]) && programOf(path.Base(argv[j])) != nil {
			s.command(j, len(argv))
		}
	}
	slices.SortStableFunc(s.code, func(a, b CodeArg) int { return a.Index - b.Index })
	s.code = slices.CompactFunc(s.code, func(a, b CodeArg) bool { return a.Index == b.Index })
	// An argument is read by the innermost program that reads it (the
	// command a wrapper runs, not the wrapper), and code is refused as
	// code.
	var opts []OptionArg
	for k := len(s.opts) - 1; k >= 0; k-- {
		o := s.opts[k]
		if !slices.ContainsFunc(opts, func(p OptionArg) bool { return p.Index == o.Index }) &&
			!slices.ContainsFunc(s.code, func(c CodeArg) bool { return c.Index == o.Index }) {
			opts = append(opts, o)
		}
	}
	slices.SortFunc(opts, func(a, b OptionArg) int { return a.Index - b.Index })
	s.opts = opts
	return s
}

// command reads argv[at:end] as one command: argv[at] the program.
func (s *scan) command(at, end int) {
	a := s.argv[at]
	if s.nest {
		s.heads = append(s.heads, at)
		if tmpl.Has(a) {
			s.add(at, "the program to run", fixProgram)
			return
		}
	}
	name := path.Base(a)
	p := programOf(name)
	if s.nest {
		s.known[at] = p != nil
		for j := at + 1; j < end; j++ {
			s.owner[j] = at
		}
	}
	if p == nil {
		p = &unknown
	}
	ws := p.words(s.argv, at, end)
	if s.nest && !p.plain {
		s.options(name, p, ws)
	}
	p.apply(s, name, at, end, ws)
}

// options records the arguments of ws that begin with a placeholder
// where the program parses options.
func (s *scan) options(name string, p *program, ws []word) {
	bad := "-"
	if p.plus {
		bad = "-+"
	}
	for _, w := range ws {
		a := s.argv[w.i]
		rest := strings.TrimLeft(a, "-")
		// The value of an option the rules know takes one is read as
		// that value, whatever it begins with.
		if !w.opts || w.kind == kValue || !strings.HasPrefix(rest, "${{") {
			continue
		}
		s.opts = append(s.opts, OptionArg{Index: w.i, Program: name, Bad: bad, Dashes: len(rest) < len(a)})
	}
}

// add records that argv[i] is code, when it holds a placeholder.
func (s *scan) add(i int, what, fix string) {
	s.addKind(i, CodeArg{What: what, Fix: fix})
}

// addKind records c for argv[i], when it holds a placeholder.
func (s *scan) addKind(i int, c CodeArg) {
	if i >= 0 && i < len(s.argv) && tmpl.Has(s.argv[i]) {
		c.Index = i
		s.code = append(s.code, c)
	}
}

// run reads argv[at:end] as the command a wrapper runs.
func (s *scan) run(wrapper string, at, end int) {
	if !s.nest || at >= end {
		return
	}
	if tmpl.Has(s.argv[at]) {
		s.heads = append(s.heads, at)
		s.add(at, "the program "+wrapper+" runs", fixProgram)
		return
	}
	s.command(at, end)
}

// apply finds p's code among its words ws, and the command it runs.
func (p *program) apply(s *scan, name string, at, end int, ws []word) {
	for _, i := range valuesOf(ws, p.code) {
		s.add(i, p.what, p.fix)
	}
	ops := operands(ws)
	if p.plus {
		for _, i := range ops {
			if strings.HasPrefix(s.argv[i], "+") {
				s.add(i, "a +command of "+name, fixFixed)
			}
		}
	}
	mode := p.args
	if slices.ContainsFunc(ws, func(w word) bool { return w.kind == kOption && slices.Contains(p.exec, s.argv[w.i]) }) {
		mode = command
	}
	if p.assign {
		ops = slices.DeleteFunc(ops, func(i int) bool { return isAssignment(s.argv[i]) })
	}
	if len(ops) > p.fixed {
		switch mode {
		case command:
			s.run(name, ops[p.fixed], end)
		case allCode:
			for _, i := range ops[p.fixed:] {
				s.add(i, p.what, p.fix)
			}
		case firstCode:
			if len(valuesOf(ws, p.gives)) == 0 {
				s.add(ops[p.fixed], p.what, p.fix)
			}
		}
	}
	if rule := customRule(name); rule != nil {
		rule(s, name, at, end, ws)
	}
}

// isAssignment reports whether a is NAME=VALUE with the name written out.
func isAssignment(a string) bool {
	name, _, ok := strings.Cut(a, "=")
	return ok && isEnvName(name)
}

// programOf returns what the rules know of a program by its name, or nil.
func programOf(name string) *program {
	if p, ok := programs[name]; ok {
		return p
	}
	if slices.Contains(shells, name) {
		return shell
	}
	for _, prefix := range []string{"python", "pypy", "perl", "ruby", "php", "lua"} {
		if strings.HasPrefix(name, prefix) && strings.Trim(name[len(prefix):], "0123456789.-") == "" {
			return programs[prefix]
		}
	}
	return nil
}
