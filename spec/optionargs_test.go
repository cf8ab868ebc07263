package spec

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// optionForms: where a placeholder that begins an argument could be an
// option, and which program reads it there.
var optionForms = []struct {
	cmd     string
	want    []int
	program string
}{
	{"systemctl restart @", []int{2}, "systemctl"},
	{"curl -o @ url", []int{2}, "curl"},
	{"curl -@", []int{1}, "curl"},
	{"curl --@=x", []int{1}, "curl"},
	{"sudo systemctl restart @", []int{3}, "systemctl"},
	{"sudo -- systemctl restart @", []int{4}, "systemctl"},
	{"vim @", []int{1}, "vim"},
	{"kubectl exec pod -- ls @", []int{5}, "ls"},
	{"kubectl get pod @", []int{3}, "kubectl"},
	{"perl -e code @", []int{3}, "perl"},
	{"find . -exec rm @ ;", []int{4}, "rm"},
	{"find . -name @", []int{3}, "find"},
	{"printf @", []int{1}, "printf"},
	{"git log @", []int{2}, "git log"},
	{"docker run img ls @", []int{4}, "ls"},
	{"sed s/a/b/ @", []int{2}, "sed"},
	{"sed -e s/a/b/ @ -- @", []int{3}, "sed"},
	{"appendline ran.log @", []int{2}, "appendline"},
	{"xargs -I{} cp {} @", []int{4}, "cp"},
	{"timeout 10 ls @", []int{3}, "ls"},
}

// Placeholders that cannot become options: after --, after a fixed
// prefix, after a shell's script or python -c, echo's arguments, and the
// values of options that take one.
var notOptionForms = []string{
	"systemctl restart -- @", "systemctl restart unit-@", "curl --output=@ url", "sh -c script @", "sh -c script sh @",
	"python3 -c code @", "python3 script.py @", "echo @", "printf %s @", "vim -- @", "kubectl exec pod -- ls -- @",
	"git log -- @", "env X=@ cmd", "timeout 10 ls -- @", "awk {print} @", "@ x", "sh -c @",
	// The value of an option a known program reads as its value.
	"sudo -u @ systemctl restart x", "git -C @ status", "docker run -v @ img", "tar -cf @ dir", "watch -n @ date", "jq --arg f @ .[$f]",
}

func TestOptionForms(t *testing.T) {
	for _, c := range optionForms {
		var got []int
		for _, o := range OptionArgs(argvOf(c.cmd)) {
			got = append(got, o.Index)
			if o.Program != c.program {
				t.Errorf("OptionArgs(%s)[%d]: program %s, want %s", c.cmd, o.Index, o.Program, c.program)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("OptionArgs(%s) = %v, want %v", c.cmd, got, c.want)
		}
	}
	for _, cmd := range notOptionForms {
		if got := OptionArgs(argvOf(cmd)); len(got) > 0 {
			t.Errorf("OptionArgs(%s) = %+v, want none", cmd, got)
		}
	}
	if o := OptionArgs(argvOf("vim @")); len(o) != 1 || o[0].Bad != "-+" {
		t.Errorf("vim: %+v, want - and + refused", o)
	}
	if o := OptionArgs(argvOf("curl -@")); len(o) != 1 || !o[0].Dashes {
		t.Errorf("curl -@: %+v, want Dashes", o)
	}
	// The letters of a placeholder are no options: tar's f would take
	// the next argument as its value.
	if o := OptionArgs(argvOf("tar -@f @")); len(o) != 2 {
		t.Errorf("tar -@f @: %+v, want both", o)
	}
	t.Logf("%d option forms refused, %d allowed", len(optionForms), len(notOptionForms))
}

// A schema keeps a value from beginning with "-" by an enum, a const, a
// minimum of 0, a boolean, a pattern anchored on a first character that
// is not "-", or (annotation only) a format.
func TestLeadCheck(t *testing.T) {
	safe := []string{
		`{"enum": ["prod", "staging"]}`, `{"const": "x"}`, `{"type": "integer", "minimum": 0}`, `{"type": "number", "exclusiveMinimum": 0}`,
		`{"type": "boolean"}`, `{"type": "string", "pattern": "^[a-z0-9]"}`, `{"type": "string", "pattern": "^[a-z][a-z0-9-]*$"}`, `{"type": "string", "pattern": "^(prod|staging)$"}`,
		`{"type": "string", "pattern": "^\\w+$"}`, `{"type": "string", "pattern": "^$"}`, `{"type": "string", "pattern": "^[^-]"}`, `{"type": "string", "pattern": "^a|^b"}`, `{"type": "string", "pattern": "^\\d{1,3}$"}`,
		`{"format": "uri"}`, `{"format": "uuid"}`, `{"anyOf": [{"enum": ["a"]}, {"type": "string", "pattern": "^b"}]}`, `{"allOf": [{"type": "string"}, {"pattern": "^[a-z]"}]}`,
		`{"enum": [1, 2]}`, `{"type": "string", "pattern": "^(?:[a-z]+)+-x$"}`, `{"type": "string", "anyOf": [{"pattern": "^a"}, {"pattern": "^b"}]}`,
	}
	unsafe := []string{
		`{"type": "string"}`, `{}`, `{"enum": ["a", "-x"]}`, `{"type": "integer"}`, `{"type": "integer", "minimum": -1}`,
		`{"pattern": "[a-z]"}`, `{"pattern": "^[a-z]*"}`, `{"pattern": "^[a-z0-9@._-]+\\.service$"}`, `{"pattern": "^.+$"}`,
		`{"pattern": "^-?[0-9]+$"}`, `{"pattern": "^a|b"}`, `{"pattern": "^(a|)"}`, `{"format": "email"}`, `{"format": "idn-hostname"}`, `{"anyOf": [{"enum": ["a"]}, {"type": "string"}]}`,
		`{"enum": [-1]}`, `{"type": "string", "pattern": "(?m)^a"}`,
		// A pattern holds only strings: -5 passes {"pattern": "^[a-z]"}.
		`{"pattern": "^[a-z]"}`, `{"type": ["string", "number"], "pattern": "^[a-z]"}`, `{"allOf": [{"pattern": "^[a-z]"}]}`, `{"pattern": "^[\\s\\S]"}`, `{"pattern": "^\\W"}`,
	}
	check := func(doc string, bad string) bool {
		var s map[string]any
		if err := json.Unmarshal([]byte(doc), &s); err != nil {
			t.Fatal(doc, err)
		}
		return leadCheck{input: map[string]any{"properties": map[string]any{"x": s}}, formats: true}.lead("${{ input.x }}", bad)
	}
	for _, doc := range safe {
		if !check(doc, "-") {
			t.Errorf("%s: refused, want it keeps - out", doc)
		}
	}
	for _, doc := range unsafe {
		if check(doc, "-") {
			t.Errorf("%s: accepted, want it refused", doc)
		}
	}
	if check(`{"pattern": "^[+a-z]"}`, "-+") {
		t.Error("^[+a-z] accepted where + is an option (vi)")
	}
	t.Logf("%d schemas accepted, %d refused", len(safe), len(unsafe))
	// A format is asserted (TestSafeFormatsAsserted), and a call's value
	// is still checked when it runs (OptionChecks).
	for doc, checked := range map[string]bool{`{"format": "uri"}`: true, `{"type": "string", "pattern": "^[a-z]"}`: false, `{"type": "string"}`: true, `{"pattern": "^[a-z]"}`: true} {
		var s map[string]any
		_ = json.Unmarshal([]byte(doc), &s)
		tool := &Tool{Input: &Schema{Doc: map[string]any{"properties": map[string]any{"x": s}}}}
		if got := len(OptionChecks(argvOf("cmd @"), tool)) > 0; got != checked {
			t.Errorf("OptionChecks with %s: checked %v, want %v", doc, got, checked)
		}
	}
}

// Expressions: literals, env and run are not the model's; ?? and ?: of
// such are not either.
func TestLeadCheckExpressions(t *testing.T) {
	c := leadCheck{input: map[string]any{"properties": map[string]any{
		"env": map[string]any{"enum": []any{"prod"}}, "s": map[string]any{"type": "string"},
		"o": map[string]any{"properties": map[string]any{"e": map[string]any{"const": "a"}}},
	}}}
	for expr, want := range map[string]bool{
		"run.id": true, "env.REGION": true, `env["REGION"]`: true, "'x'": true, "'-x'": false, "1": true, "-1": false,
		"input.env": true, `input["env"]`: true, "input.s": false, "input.env ?? 'prod'": true, "input.s ?? 'a'": false,
		"input.env == 'prod' ? 'a' : 'b'": true, "input.o.e": true, "lower(input.env)": false, "input.nope": false, "resume.x": false,
		"input?.env": true,
	} {
		if got := c.lead("${{ "+expr+" }}", "-"); got != want {
			t.Errorf("lead(%s) = %v, want %v", expr, got, want)
		}
	}
	// With the value naming the option (-${{ x }}), only a fixed set
	// will do.
	c.strict = true
	c.input["properties"].(map[string]any)["p"] = map[string]any{"pattern": "^[a-z]"}
	for expr, want := range map[string]bool{"input.env": true, "input.p": false, "1": true, "input.s": false} {
		if got := c.lead(fmt.Sprintf("${{ %s }}", expr), "-"); got != want {
			t.Errorf("strict lead(%s) = %v, want %v", expr, got, want)
		}
	}
}

// TestSafeFormatsAsserted: a spec's schema asserts format, so a value of
// a format safeFormats counts cannot begin with "-"; email is refused by
// leadCheck because an address may, and idn-hostname because the library
// does not check it.
func TestSafeFormatsAsserted(t *testing.T) {
	for _, format := range safeFormats {
		s := lazySchema(map[string]any{"type": "string", "format": format}, Pos{})
		for _, v := range []string{"-x", "--output=/tmp/x", "-rf", "-a@b.example", "-1"} {
			if err := s.Validate(v); err == nil {
				t.Errorf("format %s accepts %q", format, v)
			}
		}
	}
	s := lazySchema(map[string]any{"type": "string", "format": "email"}, Pos{})
	if err := s.Validate("-a@b.example"); err != nil {
		t.Errorf("email: %v (leadCheck refuses email because such an address is valid)", err)
	}
	if err := s.Validate("not-an-address"); err == nil {
		t.Error("email accepts not-an-address: format is not asserted")
	}
	if err := lazySchema(map[string]any{"format": "idn-hostname"}, Pos{}).Validate("-x"); err != nil {
		t.Errorf("idn-hostname is checked now (%v): it may join safeFormats", err)
	}
}
