package spec

import (
	"slices"
	"strings"
)

// opts describes how a program reads its options, as far as the rules
// on its arguments need: which options take a value, and where its
// options end.
type opts struct {
	values   string   // short options that take a value: "uCg" (-u app, -uapp)
	optional string   // short options whose value, if any, is attached: sed -i.bak
	long     []string // long options that take a value: "--user" (--user app, --user=app)
	long2    []string // long options that take two values: jq --arg NAME VALUE
	single   bool     // options are words after one dash (sqlite3 -cmd, gdb -ex): no grouped letters
	posix    bool     // options end at the first operand (wrappers, shells, interpreters)
	stop     []string // options whose value ends the options (python -c)
}

// argKind is what an argument is to the program that reads it.
type argKind uint8

const (
	kOperand argKind = iota // not an option: a file, a target, a command
	kOption                 // an option, its value attached if it takes one
	kValue                  // the value of the option before it
	kEnd                    // a literal --: options end here
)

// word is one argument as the program at the head of a command reads it.
type word struct {
	i    int
	kind argKind
	opt  string // of kValue, and of kOption with its value attached: the option ("-e", "--expression")
	// opts reports that the program still parses options here: before
	// --, and for a posix program up to its first operand. An argument
	// that begins with a placeholder there could be made an option.
	opts bool
}

// words returns how a program reads argv[at+1:end].
func (o opts) words(argv []string, at, end int) []word {
	var out []word
	parsing := true
	for j := at + 1; j < end; j++ {
		a := argv[j]
		w := word{i: j, opts: parsing}
		switch {
		case !parsing || a == "-" || !strings.HasPrefix(a, "-"):
			w.kind = kOperand
			parsing = parsing && !o.posix
			out = append(out, w)
			continue
		case a == "--":
			w.kind = kEnd
			parsing = false
			out = append(out, w)
			continue
		}
		w.kind = kOption
		opt, n := o.option(a)
		if n < 0 { // the value is attached
			w.opt = opt
		}
		out = append(out, w)
		for ; n > 0 && j+1 < end; n-- {
			j++
			out = append(out, word{i: j, kind: kValue, opt: opt, opts: parsing})
		}
		if slices.Contains(o.stop, opt) {
			parsing = false
		}
	}
	return out
}

// option reads an option argument a: the option that takes a value, if
// any, and how many arguments after a hold its values (-1: the value is
// attached to a).
func (o opts) option(a string) (opt string, n int) {
	if strings.HasPrefix(strings.TrimLeft(a, "-"), "${{") {
		return "", 0 // a value names the option: its letters are unknown
	}
	if o.single || strings.HasPrefix(a, "--") || o.isLong(a) {
		name, _, attached := strings.Cut(a, "=")
		if o.single && strings.HasPrefix(name, "--") {
			name = name[1:]
		}
		switch {
		case slices.Contains(o.long, name):
			n = 1
		case slices.Contains(o.long2, name):
			n = 2
		default:
			return "", 0
		}
		if attached {
			if n == 1 {
				return name, -1
			}
			return name, n - 1
		}
		return name, n
	}
	opt, attached := o.cluster(a)
	switch {
	case attached:
		return opt, -1
	case opt != "":
		return opt, 1
	}
	return "", 0
}

// isLong reports whether a (-eval, -TT=x) is an option of o written
// with one dash that takes a value.
func (o opts) isLong(a string) bool {
	name, _, _ := strings.Cut(a, "=")
	return slices.Contains(o.long, name) || slices.Contains(o.long2, name)
}

// cluster reads grouped short options (-neCODE, -le, -i.bak): it returns
// the first that takes a value, and whether the value is attached.
func (o opts) cluster(a string) (opt string, attached bool) {
	for k := 1; k < len(a); k++ {
		c := a[k]
		switch {
		case strings.IndexByte(o.values, c) >= 0:
			return "-" + string(c), k+1 < len(a)
		case strings.IndexByte(o.optional, c) >= 0:
			return "", false
		}
	}
	return "", false
}

// operands returns the indices of the words that are operands.
func operands(ws []word) []int {
	var out []int
	for _, w := range ws {
		if w.kind == kOperand {
			out = append(out, w.i)
		}
	}
	return out
}

// valuesOf returns the indices holding the values of the options named:
// the argument after the option, or the option itself with its value
// attached.
func valuesOf(ws []word, names []string) []int {
	var out []int
	for _, w := range ws {
		if w.opt != "" && w.kind != kOperand && slices.Contains(names, w.opt) {
			out = append(out, w.i)
		}
	}
	return out
}
