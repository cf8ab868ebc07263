// Package tmpl compiles and renders the ${{ expr }} placeholders of agent
// specs. An expression is expr-lang source evaluated against named
// variables (input, results, env, ...). A string that is exactly one
// placeholder keeps the expression's type; placeholders inside a longer
// string render as text.
package tmpl

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

const (
	open  = "${{"
	close = "}}"
)

// Error is a compile error of one placeholder. Offset is the byte offset of
// the placeholder's "${{" in the source string.
type Error struct {
	Offset int
	Expr   string
	Msg    string
}

func (e *Error) Error() string {
	if e.Expr == "" {
		return e.Msg
	}
	return fmt.Sprintf("expression %q: %s", e.Expr, e.Msg)
}

// Env holds the variables an expression is evaluated against.
type Env map[string]any

// String is a compiled string that may hold placeholders. The zero value
// renders as the empty string.
type String struct {
	src   string
	parts []part
}

type part struct {
	lit  string
	prog *vm.Program // nil for a literal part
}

// Vars declares the variables expressions may use, each by an example
// value of its type (map[string]any{} for an object, []any{} for a list).
// Any other name is a compile error.
type Vars map[string]any

// Parse compiles s for the given variables.
func Parse(s string, vars Vars) (*String, error) {
	t := &String{src: s}
	rest, off := s, 0
	for {
		i := strings.Index(rest, open)
		if i < 0 {
			if rest != "" {
				t.parts = append(t.parts, part{lit: rest})
			}
			return t, nil
		}
		if i > 0 {
			t.parts = append(t.parts, part{lit: rest[:i]})
		}
		body := rest[i+len(open):]
		n, ok := exprEnd(body)
		if !ok {
			return nil, &Error{Offset: off + i, Msg: `unterminated "${{": missing "}}"`}
		}
		src := strings.TrimSpace(body[:n])
		if src == "" {
			return nil, &Error{Offset: off + i, Msg: `empty "${{ }}"`}
		}
		prog, err := compile(src, vars)
		if err != nil {
			return nil, &Error{Offset: off + i, Expr: src, Msg: err.Error()}
		}
		t.parts = append(t.parts, part{prog: prog})
		adv := i + len(open) + n + len(close)
		rest, off = rest[adv:], off+adv
	}
}

// Has reports whether s holds a placeholder.
func Has(s string) bool { return strings.Contains(s, open) }

func compile(src string, vars Vars) (*vm.Program, error) {
	prog, err := expr.Compile(src, expr.Env(map[string]any(vars)))
	if err != nil {
		if fe, ok := err.(*file.Error); ok {
			// One line, without expr's source snippet.
			return nil, fmt.Errorf("%s (column %d)", fe.Message, fe.Column+1)
		}
		return nil, err
	}
	return prog, nil
}

// exprEnd returns the index of the "}}" closing an expression body,
// skipping string literals and nested braces.
func exprEnd(s string) (int, bool) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'', '`':
			for i++; i < len(s) && s[i] != c; i++ {
				if s[i] == '\\' && c != '`' {
					i++
				}
			}
		case '{':
			depth++
		case '}':
			if depth == 0 {
				if i+1 < len(s) && s[i+1] == '}' {
					return i, true
				}
				return 0, false
			}
			depth--
		}
	}
	return 0, false
}

// Source returns the string as written.
func (t *String) Source() string {
	if t == nil {
		return ""
	}
	return t.src
}

// Literal reports whether t holds no placeholder.
func (t *String) Literal() bool {
	if t == nil {
		return true
	}
	for _, p := range t.parts {
		if p.prog != nil {
			return false
		}
	}
	return true
}

// Eval evaluates t. A string that is exactly one placeholder yields the
// expression's value with its type; any other string yields a string.
func (t *String) Eval(env Env) (any, error) {
	if t != nil && len(t.parts) == 1 && t.parts[0].prog != nil {
		return run(t.parts[0].prog, env)
	}
	return t.Render(env)
}

// Render evaluates t and renders the result as text: strings as they are,
// nil as nothing, numbers and booleans in their usual form, anything else
// as JSON.
func (t *String) Render(env Env) (string, error) {
	if t == nil {
		return "", nil
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.prog == nil {
			b.WriteString(p.lit)
			continue
		}
		v, err := run(p.prog, env)
		if err != nil {
			return "", err
		}
		s, err := Text(v)
		if err != nil {
			return "", err
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

func run(prog *vm.Program, env Env) (any, error) {
	v, err := expr.Run(prog, map[string]any(env))
	if err != nil {
		if fe, ok := err.(*file.Error); ok {
			return nil, fmt.Errorf("expression %q: %s", prog.Source().String(), fe.Message)
		}
		return nil, fmt.Errorf("expression %q: %w", prog.Source().String(), err)
	}
	return v, nil
}

// Text renders a value as text the way placeholders inside strings do.
func Text(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case json.Number:
		return v.String(), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("render %T: %w", v, err)
	}
	return string(b), nil
}
