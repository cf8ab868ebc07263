package tmpl

import (
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// literalEnv checks that an expression reads environment variables only by
// a literal name (env.NAME, env["NAME"]): the names a spec reads are then
// known when it is compiled, and a model cannot steer an expression to
// any other variable (env[input.k], toJSON(env)). $env, which holds every
// variable including env, is refused for the same reason, even with
// anyEnv (see AnyEnv), which lets env pass. It returns the byte offset in
// src of the first offending use and what to write instead; msg is ""
// when src is fine.
func literalEnv(src string, anyEnv bool) (at int, msg string) {
	tree, err := parser.Parse(src)
	if err != nil {
		return 0, "" // compile reports it
	}
	v := &envVisitor{literal: map[*ast.IdentifierNode]bool{}, computed: map[*ast.IdentifierNode]bool{}}
	ast.Walk(&tree.Node, v)
	for _, id := range v.uses {
		at = byteOffset(src, id.Location().From)
		switch {
		case id.Value == "$env":
			return at, "$env is not available: name what you read (input.NAME, env.NAME, ...), so that what an expression reads is known when the spec is compiled"
		case anyEnv: // a snapshot: env passes (see AnyEnv)
		case v.computed[id]:
			return at, `env[...] with a computed name: read an environment variable by its literal name, env.NAME or env["NAME"]; to choose among several, name each (input.k == "a" ? env.A : env.B)`
		case !v.literal[id]:
			return at, `env used as a whole: read an environment variable by its literal name, env.NAME or env["NAME"] (toJSON(env), keys(env) and the like would expose every variable)`
		}
	}
	return 0, ""
}

// envVisitor collects the uses of env and $env, and which of them are a
// member access by a literal name or by a computed one. ast.Walk visits
// children first, so an identifier is seen before the member holding it.
type envVisitor struct {
	uses              []*ast.IdentifierNode
	literal, computed map[*ast.IdentifierNode]bool
}

func (v *envVisitor) Visit(n *ast.Node) {
	switch n := (*n).(type) {
	case *ast.IdentifierNode:
		if n.Value == "env" || n.Value == "$env" {
			v.uses = append(v.uses, n)
		}
	case *ast.MemberNode:
		id, ok := n.Node.(*ast.IdentifierNode)
		if !ok || id.Value != "env" {
			return
		}
		if _, ok := n.Property.(*ast.StringNode); ok {
			v.literal[id] = true
		} else {
			v.computed[id] = true
		}
	}
}

// byteOffset converts a rune offset in s, as expr's locations count, to a
// byte offset.
func byteOffset(s string, runes int) int {
	off := 0
	for i := 0; i < runes && off < len(s); i++ {
		_, size := utf8.DecodeRuneInString(s[off:])
		off += size
	}
	return off
}
