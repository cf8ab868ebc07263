// Package tmpl compiles and renders the ${{ expr }} placeholders of agent
// specs. An expression is expr-lang source evaluated against named
// variables (input, results, env, ...). A string that is exactly one
// placeholder keeps the expression's type; placeholders inside a longer
// string render as text.
package tmpl

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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

// Error is a compile error of one placeholder. Offset is the byte offset in
// the source string of the placeholder's "${{", or of the offending use of
// a variable inside it.
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
	off  int         // byte offset of prog's source in the string
}

// Vars declares the variables expressions may use, each by an example
// value of its type (map[string]any{} for an object, []any{} for a list).
// Any other name is a compile error.
type Vars map[string]any

// Option changes how Parse compiles.
type Option int

// AnyEnv accepts any use of env, not only by a literal name: for specs
// accepted before that rule (a run's snapshot), so that such runs can
// still be decided. It is safe there because an expression is only ever
// given the variables its declaration reads by literal name: any other
// name reads as missing. $env stays refused.
const AnyEnv Option = 1

// Parse compiles s for the given variables.
func Parse(s string, vars Vars, opts ...Option) (*String, error) {
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
		start := off + i + len(open) + len(body[:n]) - len(strings.TrimLeft(body[:n], " \t\r\n"))
		if at, msg := literalEnv(src, slices.Contains(opts, AnyEnv)); msg != "" {
			return nil, &Error{Offset: start + at, Expr: src, Msg: msg}
		}
		t.parts = append(t.parts, part{prog: prog, off: start})
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

// Placeholders returns the source of each expression t holds, in order.
func (t *String) Placeholders() []string {
	var out []string
	for _, p := range t.partsOrNil() {
		if p.prog != nil {
			out = append(out, p.prog.Source().String())
		}
	}
	return out
}

func (t *String) partsOrNil() []part {
	if t == nil {
		return nil
	}
	return t.parts
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
	return t.RenderEscaped(env, func(_, s string) (string, error) { return s, nil })
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

// Value is a compiled tree of JSON values (maps, lists, scalars) whose
// strings may hold placeholders, such as a suspend payload.
type Value struct {
	str  *String
	list []*Value
	obj  map[string]*Value
	lit  any // a non-string scalar
	kind byte
}

const (
	kindLit byte = iota
	kindStr
	kindList
	kindObj
)

// PathError is a compile error inside a Value: Path holds the JSON
// pointer tokens of the string that failed.
type PathError struct {
	Path []string
	Err  *Error
}

func (e *PathError) Error() string { return e.Err.Error() }

// ParseValue compiles every string in v, a JSON-like tree.
func ParseValue(v any, vars Vars, opts ...Option) (*Value, error) {
	return parseValue(v, vars, nil, opts)
}

func parseValue(v any, vars Vars, path []string, opts []Option) (*Value, error) {
	switch v := v.(type) {
	case string:
		s, err := Parse(v, vars, opts...)
		if err != nil {
			return nil, &PathError{Path: path, Err: err.(*Error)}
		}
		return &Value{str: s, kind: kindStr}, nil
	case []any:
		out := &Value{kind: kindList, list: make([]*Value, len(v))}
		for i, e := range v {
			c, err := parseValue(e, vars, append(path[:len(path):len(path)], fmt.Sprint(i)), opts)
			if err != nil {
				return nil, err
			}
			out.list[i] = c
		}
		return out, nil
	case map[string]any:
		out := &Value{kind: kindObj, obj: make(map[string]*Value, len(v))}
		for k, e := range v {
			c, err := parseValue(e, vars, append(path[:len(path):len(path)], k), opts)
			if err != nil {
				return nil, err
			}
			out.obj[k] = c
		}
		return out, nil
	}
	return &Value{lit: v}, nil
}

// Field returns the value of an object's field name, and whether v is an
// object that has it.
func (v *Value) Field(name string) (*Value, bool) {
	if v == nil || v.kind != kindObj {
		return nil, false
	}
	f, ok := v.obj[name]
	return f, ok
}

// Fields returns the names of an object's fields, sorted; nil when v is
// not an object.
func (v *Value) Fields() []string {
	if v == nil || v.kind != kindObj {
		return nil
	}
	return slices.Sorted(maps.Keys(v.obj))
}

// Eval evaluates every placeholder and returns the resulting tree.
func (v *Value) Eval(env Env) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch v.kind {
	case kindStr:
		return v.str.Eval(env)
	case kindList:
		out := make([]any, len(v.list))
		for i, e := range v.list {
			x, err := e.Eval(env)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case kindObj:
		out := make(map[string]any, len(v.obj))
		for k, e := range v.obj {
			x, err := e.Eval(env)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	}
	return v.lit, nil
}

// Literal reports whether v holds no placeholder.
func (v *Value) Literal() bool {
	switch {
	case v == nil:
		return true
	case v.kind == kindStr:
		return v.str.Literal()
	}
	for _, e := range v.list {
		if !e.Literal() {
			return false
		}
	}
	for _, e := range v.obj {
		if !e.Literal() {
			return false
		}
	}
	return true
}

// Expr is a compiled condition: a constant boolean or one placeholder
// whose expression yields a boolean.
type Expr struct {
	constant bool
	expr     *String
}

// Const returns an Expr that is always b.
func Const(b bool) Expr { return Expr{constant: b} }

// ParseExpr compiles a string that must be exactly one placeholder.
func ParseExpr(s string, vars Vars, opts ...Option) (Expr, error) {
	t, err := Parse(s, vars, opts...)
	if err != nil {
		return Expr{}, err
	}
	if len(t.parts) != 1 || t.parts[0].prog == nil {
		return Expr{}, &Error{Msg: "want one ${{ expression }} and nothing around it"}
	}
	return Expr{expr: t}, nil
}

// IsConst reports whether e is a constant, and which.
func (e Expr) IsConst() (value, ok bool) { return e.constant, e.expr == nil }

// Source returns the expression as written ("true" or "false" for constants).
func (e Expr) Source() string {
	if e.expr == nil {
		return strconv.FormatBool(e.constant)
	}
	return e.expr.Source()
}

// Eval evaluates the condition. An expression that does not yield a
// boolean is an error.
func (e Expr) Eval(env Env) (bool, error) {
	if e.expr == nil {
		return e.constant, nil
	}
	v, err := e.expr.Eval(env)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("expression %q: got %T, want a boolean", e.expr.parts[0].prog.Source().String(), v)
	}
	return b, nil
}

// RenderEscaped renders t like Render, passing each placeholder's text
// through escape, with what was rendered before it (to escape by
// position, as a URL's path and query want), while literal text stays as
// is. An error from escape is the render's.
func (t *String) RenderEscaped(env Env, escape func(before, value string) (string, error)) (string, error) {
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
		if s, err = escape(b.String(), s); err != nil {
			return "", err
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

// Source returns the tree as written: each string with its
// placeholders, unevaluated.
func (v *Value) Source() any {
	if v == nil {
		return nil
	}
	switch v.kind {
	case kindStr:
		return v.str.Source()
	case kindList:
		out := make([]any, len(v.list))
		for i, e := range v.list {
			out[i] = e.Source()
		}
		return out
	case kindObj:
		out := make(map[string]any, len(v.obj))
		for k, e := range v.obj {
			out[k] = e.Source()
		}
		return out
	}
	return v.lit
}
