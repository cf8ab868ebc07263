package tmpl

import (
	"maps"
	"slices"

	"github.com/expr-lang/expr/ast"
)

// EnvNames returns the names read as env.NAME (or env["NAME"]) by t's
// expressions, so that their values can be kept out of what is stored.
func (t *String) EnvNames() []string { return t.Reads("env") }

// Reads returns the names read as VARIABLE.NAME (or VARIABLE["NAME"]) by
// t's expressions: the fields of input, resume or run a template uses.
func (t *String) Reads(variable string) []string {
	var names []string
	for _, r := range t.ReadsAt(variable) {
		names = append(names, r.Name)
	}
	return names
}

// Read is one field read by a literal name, VARIABLE.NAME or
// VARIABLE["NAME"]: Offset is the byte offset in the string's source of
// the variable's name.
type Read struct {
	Name   string
	Offset int
}

// ReadsAt returns each field t's expressions read on variable by a
// literal name, once per name, with where it is first read.
func (t *String) ReadsAt(variable string) []Read {
	if t == nil {
		return nil
	}
	var out []Read
	for _, p := range t.parts {
		if p.prog == nil {
			continue
		}
		src := p.prog.Source().String()
		node := p.prog.Node()
		ast.Walk(&node, pathVisitor(func(n ast.Node) {
			m, ok := n.(*ast.MemberNode)
			if !ok {
				return
			}
			id, ok := m.Node.(*ast.IdentifierNode)
			s, lit := m.Property.(*ast.StringNode)
			if !ok || !lit || id.Value != variable || slices.ContainsFunc(out, func(r Read) bool { return r.Name == s.Value }) {
				return
			}
			out = append(out, Read{Name: s.Value, Offset: p.off + byteOffset(src, id.Location().From)})
		}))
	}
	return out
}

// EnvNames returns the env names read anywhere in v.
func (v *Value) EnvNames() []string { return v.Reads("env") }

// Reads returns the names read as VARIABLE.NAME anywhere in v.
func (v *Value) Reads(variable string) []string {
	if v == nil {
		return nil
	}
	var names []string
	add := func(ns []string) {
		for _, n := range ns {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	add(v.str.Reads(variable))
	for _, e := range v.list {
		add(e.Reads(variable))
	}
	for _, e := range v.obj {
		add(e.Reads(variable))
	}
	return names
}

// Paths returns the paths read on variable by literal member access
// (input.a, input.a.b, input["a"]), and whether variable is also used in
// any other way (get(input, k), input[k], "a" in input), which hides what
// it reads.
func (e Expr) Paths(variable string) (paths [][]string, opaque bool) {
	if e.expr == nil {
		return nil, false
	}
	uses, members := 0, 0
	for _, p := range e.expr.parts {
		if p.prog == nil {
			continue
		}
		node := p.prog.Node()
		ast.Walk(&node, pathVisitor(func(n ast.Node) {
			switch n := n.(type) {
			case *ast.IdentifierNode:
				if n.Value == variable {
					uses++
				}
			case *ast.MemberNode:
				if path, ok := memberPath(n, variable); ok {
					if len(path) == 1 {
						members++
					}
					paths = append(paths, path)
				}
			}
		}))
	}
	return paths, uses > members
}

// Guarded returns the paths of variable the expression compares with nil
// (input.a == nil, input.a != nil) or gives a default (input.a ?? x):
// those whose absence the author handles.
func (e Expr) Guarded(variable string) [][]string {
	if e.expr == nil {
		return nil
	}
	var out [][]string
	add := func(n ast.Node) {
		if m, ok := n.(*ast.MemberNode); ok {
			if path, ok := memberPath(m, variable); ok {
				out = append(out, path)
			}
		}
	}
	for _, p := range e.expr.parts {
		if p.prog == nil {
			continue
		}
		node := p.prog.Node()
		ast.Walk(&node, pathVisitor(func(n ast.Node) {
			b, ok := n.(*ast.BinaryNode)
			if !ok {
				return
			}
			_, leftNil := b.Left.(*ast.NilNode)
			_, rightNil := b.Right.(*ast.NilNode)
			switch {
			case b.Operator == "??":
				add(b.Left)
			case (b.Operator == "==" || b.Operator == "!=") && rightNil:
				add(b.Left)
			case (b.Operator == "==" || b.Operator == "!=") && leftNil:
				add(b.Right)
			}
		}))
	}
	return out
}

// memberPath returns the literal path of a member chain rooted at
// variable: input.a.b is [a b].
func memberPath(m *ast.MemberNode, variable string) ([]string, bool) {
	s, ok := m.Property.(*ast.StringNode)
	if !ok {
		return nil, false
	}
	switch n := m.Node.(type) {
	case *ast.IdentifierNode:
		return []string{s.Value}, n.Value == variable
	case *ast.MemberNode:
		head, ok := memberPath(n, variable)
		return append(head, s.Value), ok
	}
	return nil, false
}

type pathVisitor func(ast.Node)

func (f pathVisitor) Visit(n *ast.Node) { f(*n) }

// OneOf returns the string values the expression requires variable to
// be one of, when its top level is a conjunction (&&, and) with a term
// variable == "x", "x" == variable or variable in ["x", "y"]; ok false
// when no such term constrains it. A single placeholder only.
func (e Expr) OneOf(variable string) (values []string, ok bool) {
	if e.expr == nil || len(e.expr.parts) != 1 || e.expr.parts[0].prog == nil {
		return nil, false
	}
	return oneOf(e.expr.parts[0].prog.Node(), variable)
}

func oneOf(n ast.Node, variable string) ([]string, bool) {
	b, isBin := n.(*ast.BinaryNode)
	if !isBin {
		return nil, false
	}
	isVar := func(n ast.Node) bool { id, ok := n.(*ast.IdentifierNode); return ok && id.Value == variable }
	str := func(n ast.Node) (string, bool) {
		if s, ok := n.(*ast.StringNode); ok {
			return s.Value, true
		}
		return "", false
	}
	switch b.Operator {
	case "&&", "and":
		l, lok := oneOf(b.Left, variable)
		r, rok := oneOf(b.Right, variable)
		switch {
		case lok && rok:
			return slices.DeleteFunc(l, func(v string) bool { return !slices.Contains(r, v) }), true
		case lok:
			return l, true
		}
		return r, rok
	case "==":
		if s, ok := str(b.Right); ok && isVar(b.Left) {
			return []string{s}, true
		}
		if s, ok := str(b.Left); ok && isVar(b.Right) {
			return []string{s}, true
		}
	case "in":
		if c, ok := b.Right.(*ast.ConstantNode); ok && isVar(b.Left) {
			// The optimizer's form of in ["x", "y"].
			if m, ok := c.Value.(map[string]struct{}); ok {
				return slices.Sorted(maps.Keys(m)), true
			}
		}
		arr, isArr := b.Right.(*ast.ArrayNode)
		if !isVar(b.Left) || !isArr {
			return nil, false
		}
		var out []string
		for _, el := range arr.Nodes {
			s, ok := str(el)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}
