package tmpl

import (
	"errors"
	"strings"
	"testing"
)

var vars = Vars{"input": map[string]any{}, "results": []any{}}

func TestEval(t *testing.T) {
	env := Env{"input": map[string]any{"n": 3.0, "s": "nginx", "m": map[string]any{"a": 1}}, "results": []any{"x"}}
	for _, tc := range []struct {
		src  string
		want any
	}{
		{"plain text", "plain text"},
		{"${{ input.n }}", 3.0},                        // one placeholder keeps its type
		{"${{ input.n + 1 }} items", "4 items"},        // inside text it renders
		{"${{input.s}}-${{ input.s }}", "nginx-nginx"}, // several
		{"${{ input.m }}", map[string]any{"a": 1}},     // objects keep their type
		{"m=${{ input.m }}", `m={"a":1}`},              // and render as JSON in text
		{"${{ input.missing }}", nil},                  // missing fields are nil
		{"[${{ input.missing }}]", "[]"},               // and render as nothing
		{`${{ {"a": "}}"}.a }}`, "}}"},                 // braces and "}}" inside literals
		{"${{ results[0] + '}' }}", "x}"},              // a lone brace in a string
		{"${{ input.s == 'nginx' ? 'yes' : 'no' }}", "yes"},
		{"", ""},
	} {
		s, err := Parse(tc.src, vars)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.src, err)
			continue
		}
		got, err := s.Eval(env)
		if err != nil {
			t.Errorf("Eval(%q): %v", tc.src, err)
			continue
		}
		if a, b := mustText(t, got), mustText(t, tc.want); a != b {
			t.Errorf("Eval(%q) = %#v, want %#v", tc.src, got, tc.want)
		}
		if _, isString := tc.want.(string); isString {
			if _, ok := got.(string); !ok {
				t.Errorf("Eval(%q) = %T, want a string", tc.src, got)
			}
		}
	}
}

func mustText(t *testing.T, v any) string {
	t.Helper()
	s, err := Text(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		src    string
		offset int
		msg    string
	}{
		{"abc ${{ input.x", 4, `unterminated "${{": missing "}}"`},
		{"${{ }}", 0, `empty "${{ }}"`},
		{"ok ${{ input.x }} ${{ nope }}", 18, `expression "nope": unknown name nope (column 1)`},
		{"${{ input + }}", 0, `expression "input +": unexpected token EOF (column 7)`},
		{"${{ env.HOME }}", 0, `expression "env.HOME": unknown name env (column 1)`},
	} {
		_, err := Parse(tc.src, vars)
		var te *Error
		if !errors.As(err, &te) {
			t.Errorf("Parse(%q) = %v, want an *Error", tc.src, err)
			continue
		}
		if te.Offset != tc.offset || te.Error() != tc.msg {
			t.Errorf("Parse(%q): offset %d, %q; want offset %d, %q", tc.src, te.Offset, te.Error(), tc.offset, tc.msg)
		}
	}
}

func TestRuntimeError(t *testing.T) {
	s, err := Parse("${{ input.n + 1 }}", vars)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Render(Env{"input": map[string]any{"n": "text"}}); err == nil {
		t.Fatal("adding a number to a string: want an error")
	}
}

func TestLiteral(t *testing.T) {
	for src, want := range map[string]bool{"a": true, "": true, "${{ input }}": false, "a ${{ 1 }}": false} {
		s, err := Parse(src, vars)
		if err != nil {
			t.Fatal(err)
		}
		if s.Literal() != want {
			t.Errorf("Literal(%q) = %v, want %v", src, !want, want)
		}
	}
}

func TestValue(t *testing.T) {
	v, err := ParseValue(map[string]any{
		"message": "Deploy ${{ input.v }}?",
		"version": "${{ input.v }}",
		"list":    []any{"${{ input.n }}", true},
		"n":       3,
	}, vars)
	if err != nil {
		t.Fatal(err)
	}
	if v.Literal() {
		t.Error("Literal() with placeholders")
	}
	got, err := v.Eval(Env{"input": map[string]any{"v": "1.2", "n": 7.0}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"list":[7,true],"message":"Deploy 1.2?","n":3,"version":"1.2"}`
	if s := mustText(t, got); s != want {
		t.Errorf("got %s, want %s", s, want)
	}
	_, err = ParseValue(map[string]any{"a": []any{"ok", "${{ nope }}"}}, vars)
	var pe *PathError
	if !errors.As(err, &pe) || strings.Join(pe.Path, "/") != "a/1" {
		t.Errorf("error %v, want a PathError at a/1", err)
	}
}

func TestExpr(t *testing.T) {
	e, err := ParseExpr("${{ input.env == 'prod' }}", vars)
	if err != nil {
		t.Fatal(err)
	}
	for env, want := range map[string]bool{"prod": true, "dev": false} {
		if got, err := e.Eval(Env{"input": map[string]any{"env": env}}); err != nil || got != want {
			t.Errorf("env=%s: %v, %v", env, got, err)
		}
	}
	if _, err := ParseExpr("x ${{ true }}", vars); err == nil {
		t.Error("text around the placeholder: want an error")
	}
	n, _ := ParseExpr("${{ input.n }}", vars)
	if _, err := n.Eval(Env{"input": map[string]any{"n": 1}}); err == nil || !strings.Contains(err.Error(), "want a boolean") {
		t.Errorf("non-boolean: %v", err)
	}
	if b, ok := Const(true).IsConst(); !b || !ok {
		t.Error("Const(true)")
	}
}

func TestEnvNames(t *testing.T) {
	v := Vars{"input": map[string]any{}, "env": map[string]string{}}
	s, err := Parse(`Bearer ${{ env.TOKEN }} ${{ env["OTHER"] + input.x }} ${{ input.env }}`, v)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.EnvNames(), ","); got != "TOKEN,OTHER" {
		t.Errorf("EnvNames = %s", got)
	}
	u, _ := Parse("/items/${{ input.id }}/x", v)
	got, _ := u.RenderEscaped(Env{"input": map[string]any{"id": "../a b?c"}}, func(_, s string) (string, error) { return "<" + s + ">", nil })
	if got != "/items/<../a b?c>/x" {
		t.Errorf("RenderEscaped = %s", got)
	}
}

func TestReadsAt(t *testing.T) {
	src := `a ${{ input.usr }} b ${{   input["x"] + input.usr }} ${{ é + input.y }}`
	s, err := Parse(src, Vars{"input": map[string]any{}, "é": ""})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range s.ReadsAt("input") {
		if !strings.HasPrefix(src[r.Offset:], "input") {
			t.Errorf("%s at %d: %q", r.Name, r.Offset, src[r.Offset:])
		}
		got = append(got, r.Name)
	}
	if strings.Join(got, ",") != "usr,x,y" {
		t.Errorf("ReadsAt = %v, want usr,x,y (each name once)", got)
	}
}

// FuzzTemplate: no source makes Parse or Render panic; a rejection is an
// *Error whose offset lies inside the source.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"plain", "${{ input.x }}", "a ${{ input.n + 1 }} b", `${{ {"a": "}}"}.a }}`, "${{", "${{ }}", "${{ input[0] ?? 'x' }}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src, vars)
		if err != nil {
			var te *Error
			if !errors.As(err, &te) || te.Offset < 0 || te.Offset > len(src) {
				t.Fatalf("Parse(%q): %v", src, err)
			}
			return
		}
		s.Render(Env{"input": map[string]any{"x": "1", "n": 2.0}, "results": []any{"r"}})
	})
}
