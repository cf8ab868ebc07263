package spec

import (
	"fmt"
	"strings"
)

// yamlError turns a yaml.v3 syntax error in data, the file name, into a
// positioned Error. yaml.v3 names one line, often the start of the block
// it was parsing, which may be far above the mistake: a tab in an
// indentation is named where it is, and an indentation error at the
// first line that is indented unlike the blocks around it.
func yamlError(name string, data []byte, err error) *Error {
	msg := err.Error()
	var line int
	// yaml.v3 reports "yaml: line N: message".
	if rest, ok := strings.CutPrefix(msg, "yaml: line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if _, err := fmt.Sscanf(rest[:i], "%d", &line); err == nil {
				msg = rest[i+2:]
			}
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	if p, ok := tabIndent(lines, line, msg); ok {
		p.File = name
		return &Error{Pos: p, Msg: "invalid YAML: this line is indented with a tab; YAML indents with spaces only"}
	}
	if indentProblem(msg) {
		if at, why, ok := misindented(lines, line); ok {
			where := ""
			if at != line {
				where = fmt.Sprintf(" (reported at line %d)", line)
			}
			return &Error{Pos: Pos{File: name, Line: at, Col: indentOf(lines[at-1]) + 1},
				Msg: fmt.Sprintf("invalid YAML: %s%s; likely cause: this line is %s", msg, where, why)}
		}
	}
	return &Error{Pos: Pos{File: name, Line: line}, Msg: "invalid YAML: " + msg}
}

// tabIndent finds the tab in the indentation that msg, reported at
// line, is about: on that line or the next for an error that a tab
// causes among others, else on the line nearest it.
func tabIndent(lines []string, line int, msg string) (Pos, bool) {
	tab := func(n int) (Pos, bool) {
		if n < 1 || n > len(lines) {
			return Pos{}, false
		}
		l := lines[n-1]
		lead := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if i := strings.IndexByte(lead, '\t'); i >= 0 {
			return Pos{Line: n, Col: i + 1}, true
		}
		return Pos{}, false
	}
	switch {
	case strings.Contains(msg, "found character that cannot start any token"):
		if p, ok := tab(line); ok {
			return p, ok
		}
		return tab(line + 1)
	case strings.Contains(msg, "tab character"):
		for d := 0; d < len(lines); d++ {
			if p, ok := tab(line + d); ok {
				return p, ok
			}
			if p, ok := tab(line - d); ok {
				return p, ok
			}
		}
	}
	return Pos{}, false
}

// indentProblem reports whether msg is one of yaml.v3's errors that a
// line indented wrongly causes.
func indentProblem(msg string) bool {
	for _, m := range []string{
		"did not find expected key",
		"mapping values are not allowed in this context",
		"did not find expected '-' indicator",
		"block sequence entries are not allowed in this context",
	} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// level is a block's indentation and the line that opened it.
type level struct{ indent, line int }

// misindented returns the first line, from the one yaml.v3 reported on,
// whose indentation matches none of the blocks around it, or that is
// deeper than the line above when that line's value is already given,
// with why. It reads lines as a block-style spec is written: block
// scalars and flow collections spanning lines are skipped.
func misindented(lines []string, reported int) (int, string, bool) {
	var (
		stack     []level
		scalarAt  = -1 // the indentation of a key whose block scalar goes on
		flow      int  // depth of open [ and { across lines
		prevGiven int  // the previous line, when its value is given on it
	)
	for i, l := range lines {
		n := i + 1
		content := strings.TrimSpace(l)
		ind := indentOf(l)
		switch {
		case content == "" || strings.HasPrefix(content, "#"):
			continue
		case scalarAt >= 0 && ind > scalarAt:
			continue
		case flow > 0:
			flow = max(0, flow+flowDepth(content))
			continue
		case content == "---" || content == "...":
			stack, prevGiven, scalarAt = nil, 0, -1
			continue
		}
		scalarAt = -1
		why := indentWhy(&stack, ind, n, prevGiven)
		if why != "" && n >= reported {
			return n, why, true
		}
		prevGiven = 0
		key, value := splitEntry(content)
		if strings.HasPrefix(content, "- ") {
			item := strings.TrimLeft(content[1:], " ")
			stack = append(stack, level{ind + len(content) - len(item), n})
			key, value = splitEntry(item)
		}
		switch {
		case key == "":
		case value == "":
		case strings.HasPrefix(value, "|") || strings.HasPrefix(value, ">"):
			scalarAt = ind
		case strings.HasPrefix(value, "&") || strings.HasPrefix(value, "!") || strings.HasPrefix(value, "#"):
		default:
			flow = max(0, flowDepth(value))
			if flow == 0 {
				prevGiven = n
			}
		}
	}
	return 0, "", false
}

// indentWhy fits line n, indented ind, into the stack of open blocks,
// and says why its indentation is wrong, or "": it closes blocks back
// to an indentation none of them has, or it is deeper than the line
// above, prevGiven, whose value is already given.
func indentWhy(stack *[]level, ind, n, prevGiven int) string {
	st := *stack
	popped := -1
	for len(st) > 0 && st[len(st)-1].indent > ind {
		popped = st[len(st)-1].indent
		st = st[:len(st)-1]
	}
	var why string
	switch {
	case len(st) > 0 && st[len(st)-1].indent == ind:
		*stack = st
		return ""
	case popped >= 0 && len(st) > 0:
		why = fmt.Sprintf("indented %d %s, unlike any block around it (%d or %d)",
			ind, plural(ind, "space", "spaces"), st[len(st)-1].indent, popped)
	case popped >= 0:
		why = fmt.Sprintf("indented %d %s, less than the block it closes (%d)", ind, plural(ind, "space", "spaces"), popped)
	case prevGiven > 0:
		why = fmt.Sprintf("indented deeper than line %d, whose value is already given", prevGiven)
	}
	*stack = append(st, level{ind, n})
	return why
}

// splitEntry splits a block mapping entry "key: value" (value possibly
// empty); key is "" when content is no such entry.
func splitEntry(content string) (key, value string) {
	if content == "" || strings.ContainsRune("'\"{[", rune(content[0])) {
		return "", ""
	}
	if k, ok := strings.CutSuffix(content, ":"); ok && !strings.Contains(k, ": ") {
		return k, ""
	}
	k, v, ok := strings.Cut(content, ": ")
	if !ok {
		return "", ""
	}
	return k, strings.TrimSpace(v)
}

// flowDepth counts the [ and { that s opens and does not close, outside
// quotes and comments.
func flowDepth(s string) int {
	depth := 0
	var quote rune
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			quote = r
		case r == '#' && (i == 0 || s[i-1] == ' '):
			return depth
		case r == '[' || r == '{':
			depth++
		case r == ']' || r == '}':
			depth--
		}
	}
	return depth
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
