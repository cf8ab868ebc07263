package spec

import (
	"github.com/expr-lang/expr/types"

	"github.com/agentctl/agentctl/spec/tmpl"
)

// maxTypeDepth bounds how deep schemaType follows nested objects: deeper
// fields are any.
const maxTypeDepth = 8

// condTypes returns the static types of a condition's variables, for
// tmpl.Expr.Check: each name in schemas (input, resume) has its schema's
// type; any other has the type of its example in vars.
func condTypes(vars tmpl.Vars, schemas map[string]*Schema) tmpl.Types {
	out := make(tmpl.Types, len(vars))
	for name, example := range vars {
		out[name] = types.TypeOf(example)
		if s := schemas[name]; s != nil && s.Doc != nil {
			out[name] = schemaType(s.Doc, 0)
		}
	}
	return out
}

// schemaType is the type a value satisfying a JSON Schema has in an
// expression: string, number, integer, boolean, object (its properties
// typed, others any) or array. A schema without one such type (none, a
// list of types, null) gives any.
func schemaType(doc any, depth int) types.Type {
	m, ok := doc.(map[string]any)
	if !ok || depth > maxTypeDepth {
		return types.Any
	}
	switch m["type"] {
	case "string":
		return types.String
	case "number":
		return types.Float64
	case "integer":
		return types.Int
	case "boolean":
		return types.Bool
	case "array":
		return types.TypeOf([]any{})
	case "object":
		t := types.Map{types.Extra: types.Any}
		props, _ := m["properties"].(map[string]any)
		for k, p := range props {
			t[k] = schemaType(p, depth+1)
		}
		return t
	}
	return types.Any
}
