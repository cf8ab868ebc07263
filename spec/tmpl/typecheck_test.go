package tmpl

import (
	"strings"
	"testing"

	"github.com/expr-lang/expr/types"
)

func TestExprCheck(t *testing.T) {
	env := Types{
		"input": types.Map{"cluster": types.String, "n": types.Float64, "ok": types.Bool, types.Extra: types.Any},
		"run":   types.TypeOf(map[string]any{}),
	}
	vars := Vars{"input": map[string]any{}, "run": map[string]any{}}
	for _, c := range []struct{ src, want string }{
		{"${{ input.cluster }}", "its type is string; want a boolean"},
		{"${{ input.n }}", "its type is number"},
		{"${{ input }}", "its type is object"},
		{"${{ input.ok && input.cluster }}", "mismatched types bool and string"},
		{"${{ input.cluster == 'prod' }}", ""},
		{"${{ input.ok }}", ""},
		{"${{ input.undeclared }}", ""},
		{"${{ run.x }}", ""},
	} {
		e, err := ParseExpr(c.src, vars)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		err = e.Check(env)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.src, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.src, err, c.want)
		}
		// The program that runs is untyped: a value of another type at
		// run time still evaluates (and fails closed there).
		if _, err := e.Eval(Env{"input": map[string]any{"cluster": true, "ok": true, "n": true}, "run": map[string]any{}}); err != nil && strings.Contains(err.Error(), "panic") {
			t.Errorf("%s: %v", c.src, err)
		}
	}
	if err := Const(true).Check(env); err != nil {
		t.Errorf("constant: %v", err)
	}
}
