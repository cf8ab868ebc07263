package spec

import (
	"encoding/json"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"

	"github.com/agentctl/agentctl/spec/tmpl"
)

// leadCheck tells whether a placeholder's value can begin with one of
// the characters that make an option, from the expression and the
// schemas of what it reads.
type leadCheck struct {
	input, resume map[string]any // the tool's schemas; nil: unknown
	formats       bool           // count a format (uri, uuid ...), which the tool's schemas assert
	strict        bool           // only a fixed set of values will do (enum, const): the value names an option
	str           bool           // a type: string holds the value (a pattern holds only strings)
}

// OptionChecks returns the arguments of argv that begin with a placeholder
// where a program parses options (OptionArgs) and whose value nothing
// holds back from beginning with one of Bad: a value from input or resume
// that the tool's schemas (t may be nil) do not constrain so. An exec
// tool checks each such value when a call runs.
func OptionChecks(argv []string, t *Tool) []OptionArg {
	c := leadCheck{}
	if t != nil {
		c.input = docOf(t.Input)
		c.resume = docOf(t.ResumeSchema)
	}
	var out []OptionArg
	for _, o := range OptionArgs(argv) {
		c.strict = o.Dashes
		if !c.lead(argv[o.Index], o.Bad) {
			out = append(out, o)
		}
	}
	return out
}

func docOf(s *Schema) map[string]any {
	if s == nil {
		return nil
	}
	return s.Doc
}

// lead reports whether the value of the first placeholder in arg cannot
// begin with one of bad.
func (c leadCheck) lead(arg, bad string) bool {
	t, err := tmpl.Parse(arg, actionVars, tmpl.AnyEnv)
	if err != nil || len(t.Placeholders()) == 0 {
		return false
	}
	tree, err := parser.Parse(t.Placeholders()[0])
	if err != nil {
		return false
	}
	return c.node(tree.Node, bad)
}

// node reports whether the value of n cannot begin with one of bad: a
// literal that does not, env and run (the operator's and the engine's),
// a read of input or resume its schema constrains, a ?? b and a ? b : c
// of such.
func (c leadCheck) node(n ast.Node, bad string) bool {
	switch n := n.(type) {
	case *ast.StringNode:
		return c.value(n.Value, bad)
	case *ast.IntegerNode:
		return n.Value >= 0
	case *ast.FloatNode:
		return n.Value >= 0
	case *ast.BoolNode, *ast.NilNode:
		return true
	case *ast.BinaryNode:
		return n.Operator == "??" && c.node(n.Left, bad) && c.node(n.Right, bad)
	case *ast.ConditionalNode:
		return c.node(n.Exp1, bad) && c.node(n.Exp2, bad)
	case *ast.ChainNode:
		return c.node(n.Node, bad)
	case *ast.MemberNode:
		root, path, ok := readPath(n)
		switch {
		case !ok:
			return false
		case root == "env" || root == "run":
			return true
		case root == "input":
			return c.schema(at(c.input, path), bad)
		case root == "resume":
			return c.schema(at(c.resume, path), bad)
		}
	}
	return false
}

// readPath returns the variable and the fields a chain of literal member
// reads names: input.a.b is input, [a b].
func readPath(n *ast.MemberNode) (root string, path []string, ok bool) {
	var rev []string
	var cur ast.Node = n
	for {
		switch m := cur.(type) {
		case *ast.MemberNode:
			s, lit := m.Property.(*ast.StringNode)
			if !lit {
				return "", nil, false
			}
			rev = append(rev, s.Value)
			cur = m.Node
		case *ast.IdentifierNode:
			for i := len(rev) - 1; i >= 0; i-- {
				path = append(path, rev[i])
			}
			return m.Value, path, true
		default:
			return "", nil, false
		}
	}
}

// at returns the schema of the property at path in an object schema, or
// nil.
func at(s map[string]any, path []string) map[string]any {
	for _, p := range path {
		props, _ := s["properties"].(map[string]any)
		s, _ = props[p].(map[string]any)
	}
	return s
}

// safeFormats are the formats whose values begin with a letter or a
// digit (a URI's scheme, a date, an address, a UUID). agentctl asserts
// format (Schema), so a value that begins with "-" fails the call's
// input or resume validation (TestSafeFormatsAsserted); email is not
// here, as an address may begin with "-", nor idn-hostname, which the
// JSON Schema library does not check. OptionChecks does not count a
// format, so the exec toolkit checks such a value when a call runs too.
var safeFormats = []string{"uri", "iri", "date-time", "date", "time", "uuid", "ipv4", "ipv6", "hostname"}

// schema reports whether every value s allows cannot begin with one of
// bad. A pattern counts only under type: string, as a number (-5)
// passes any pattern.
func (c leadCheck) schema(s map[string]any, bad string) bool {
	if s == nil {
		return false
	}
	if v, ok := s["const"]; ok {
		return c.value(v, bad)
	}
	if vs, ok := s["enum"].([]any); ok {
		for _, v := range vs {
			if !c.value(v, bad) {
				return false
			}
		}
		return true
	}
	all, _ := s["allOf"].([]any)
	c.str = c.str || s["type"] == "string" || slices.ContainsFunc(all, func(sub any) bool {
		m, _ := sub.(map[string]any)
		return m["type"] == "string"
	})
	if len(all) > 0 {
		for _, sub := range all {
			if m, _ := sub.(map[string]any); c.schema(m, bad) {
				return true
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if subs, ok := s[k].([]any); ok && len(subs) > 0 && c.every(subs, bad) {
			return true
		}
	}
	if c.strict {
		return false
	}
	switch s["type"] {
	case "boolean":
		return true
	case "integer", "number":
		return nonNegative(s["minimum"]) || nonNegative(s["exclusiveMinimum"])
	}
	if p, ok := s["pattern"].(string); ok && c.str && patternLeads(p, bad) {
		return true
	}
	f, _ := s["format"].(string)
	return c.formats && slices.Contains(safeFormats, f)
}

func (c leadCheck) every(subs []any, bad string) bool {
	for _, sub := range subs {
		if m, _ := sub.(map[string]any); !c.schema(m, bad) {
			return false
		}
	}
	return true
}

// value reports whether a literal value, rendered as text, cannot begin
// with one of bad.
func (c leadCheck) value(v any, bad string) bool {
	switch v := v.(type) {
	case string:
		return v == "" || !strings.ContainsRune(bad, rune(v[0]))
	case nil, bool:
		return true
	}
	return nonNegative(v)
}

// nonNegative reports whether v is a number >= 0.
func nonNegative(v any) bool {
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		return err == nil && f >= 0
	case float64:
		return v >= 0
	case int:
		return v >= 0
	case int64:
		return v >= 0
	}
	return false
}

// patternLeads reports whether every string a JSON Schema pattern
// matches begins with a character not in bad (or is empty): the pattern
// is anchored with ^ and what must follow cannot begin with one of bad.
// ^[a-z]* does not do: it matches the empty start of "-rf".
func patternLeads(pattern, bad string) bool {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return false
	}
	var branches []*syntax.Regexp
	if re.Op == syntax.OpAlternate {
		branches = re.Sub
	} else {
		branches = []*syntax.Regexp{re}
	}
	for _, b := range branches {
		if b.Op != syntax.OpConcat || len(b.Sub) == 0 || b.Sub[0].Op != syntax.OpBeginText {
			return false
		}
		for _, r := range bad {
			if can, empty := startsWith(&syntax.Regexp{Op: syntax.OpConcat, Sub: b.Sub[1:]}, r); can || empty {
				return false
			}
		}
	}
	return true
}

// startsWith reports whether re can match a string beginning with r,
// and whether it can match while consuming nothing (then what follows is
// unconstrained).
func startsWith(re *syntax.Regexp, r rune) (can, empty bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return false, true
		}
		return re.Rune[0] == r, false
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= r && r <= re.Rune[i+1] {
				return true, false
			}
		}
		return false, false
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return true, false
	case syntax.OpEndText, syntax.OpNoMatch:
		return false, false // nothing may follow, or nothing matches
	case syntax.OpCapture, syntax.OpPlus:
		return startsWith(re.Sub[0], r)
	case syntax.OpStar, syntax.OpQuest:
		can, _ := startsWith(re.Sub[0], r)
		return can, true
	case syntax.OpRepeat:
		can, empty := startsWith(re.Sub[0], r)
		return can, empty || re.Min == 0
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			can, empty := startsWith(sub, r)
			if can || !empty {
				return can, false
			}
		}
		return false, true
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			c, e := startsWith(sub, r)
			can, empty = can || c, empty || e
		}
		return can, empty
	}
	return false, true // empty matches and assertions: ^, $ with (?m), \b
}
