package tmpl

import (
	"errors"
	"strings"
	"testing"
)

// TestLiteralEnv: env is read only by a literal name; any computed access
// or other use of env, and $env, is a compile error at the offending use.
func TestLiteralEnv(t *testing.T) {
	v := Vars{"input": map[string]any{}, "env": map[string]string{}}
	for _, ok := range []string{
		`${{ env.TOKEN }}`, `${{ env["TOKEN"] }}`, `${{ env?.TOKEN ?? "x" }}`,
		`${{ input.k == "a" ? env.A : env.B }}`, `${{ input.env }}`, `${{ {env: 1}.env }}`,
	} {
		if _, err := Parse(ok, v); err != nil {
			t.Errorf("Parse(%s): %v", ok, err)
		}
	}
	for _, tc := range []struct {
		src, want string
		offset    int
	}{
		{`${{ env[input.k] }}`, "computed name", 4},
		{`x ${{  env["A" + "B"] }}`, "computed name", 7},
		{`${{ toJSON(env) }}`, "env used as a whole", 11},
		{`${{ keys(env) }}`, "env used as a whole", 9},
		{`${{ env }}`, "env used as a whole", 4},
		{`${{ "A" in env }}`, "env used as a whole", 11},
		{`${{ let e = env; e[input.k] }}`, "env used as a whole", 12},
		{`${{ map(["A"], env[#]) }}`, "computed name", 15},
		{`${{ $env.env[input.k] }}`, "$env is not available", 4},
		{`${{ toJSON($env) }}`, "$env is not available", 11},
		{`${{ "é" + env[input.k] }}`, "computed name", 11},
	} {
		_, err := Parse(tc.src, v)
		var te *Error
		if !errors.As(err, &te) || !strings.Contains(te.Msg, tc.want) || te.Offset != tc.offset {
			t.Errorf("Parse(%s) = %v (offset %v), want %q at %d", tc.src, err, te, tc.want, tc.offset)
		}
	}
	// $env is refused wherever it appears: it would hide what a gate reads.
	if _, err := Parse(`${{ $env.input[input.k] }}`, vars); err == nil {
		t.Error("$env in a template without env: want an error")
	}
}
