package spec

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every shipped example must load cleanly against the embedded schema.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../examples/agents/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	for _, f := range files {
		if _, err := LoadFiles(f); err != nil {
			t.Errorf("%s:\n%v", f, err)
		}
	}
}

func loadSrc(t *testing.T, files ...string) (*Spec, error) {
	t.Helper()
	var srcs []Source
	for i := 0; i+1 < len(files); i += 2 {
		srcs = append(srcs, Source{Name: files[i], Data: []byte(files[i+1])})
	}
	return Load(srcs)
}

func errorLines(t *testing.T, err error) []string {
	t.Helper()
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("want spec.Errors, got %v", err)
	}
	return strings.Split(es.Error(), "\n")
}

func TestLoad(t *testing.T) {
	s, err := loadSrc(t, "a.yaml", `
version: 1
models:
  m: {provider: scripted, turns: [{text: hi}, {toolCalls: [{tool: t, args: {n: 1}}]}]}
tools:
  t:
    description: a tool
    input: {type: object, properties: {n: {type: integer}}}
    exec: {command: [echo, "${{ input.n }}"], timeout: 2s}
    requireApproval: true
agents:
  a: {model: m, tools: [t], maxSteps: 3, requireToolApproval: true, instructions: be brief}
`)
	if err != nil {
		t.Fatal(err)
	}
	a, tl, m := s.Agents["a"], s.Tools["t"], s.Models["m"]
	if a.MaxSteps != 3 || !a.RequireToolApproval || a.Instructions != "be brief" || a.Tools[0] != "t" {
		t.Errorf("agent: %+v", a)
	}
	if need, ok := tl.RequireApproval.IsConst(); !need || !ok || tl.Exec.Timeout.Seconds() != 2 || len(tl.Exec.Command) != 2 {
		t.Errorf("tool: %+v", tl)
	}
	if err := tl.ValidateInput(map[string]any{"n": "x"}); err == nil {
		t.Error("input schema accepts a string for an integer")
	}
	// A reload compiles the schema on first use, to the same effect.
	r, err := Reload(s.Sources)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Tools["t"].ValidateInput(map[string]any{"n": "x"}); err == nil {
		t.Error("reloaded input schema accepts a string for an integer")
	}
	if err := r.Tools["t"].ValidateInput(map[string]any{"n": 1}); err != nil {
		t.Errorf("reloaded input schema rejects valid input: %v", err)
	}
	if args, _ := m.Turns[1].ToolCalls[0].Args.Eval(nil); len(m.Turns) != 2 || args.(map[string]any)["n"] == nil {
		t.Errorf("model: %+v", m)
	}
	if tl.Pos.String() != "a.yaml:6:3" {
		t.Errorf("tool position %s, want a.yaml:6:3", tl.Pos)
	}
}

func TestDefaults(t *testing.T) {
	s, err := loadSrc(t, "a.yaml", `
version: 1
models: {m: {provider: scripted, turns: [{text: hi}]}}
tools: {t: {output: ok}}
agents: {a: {model: m}}
`)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Agents["a"].MaxSteps; got != DefaultMaxSteps {
		t.Errorf("maxSteps %d, want %d", got, DefaultMaxSteps)
	}
	if s.Tools["t"].Input.Doc["type"] != "object" {
		t.Errorf("default input schema %v, want any object", s.Tools["t"].Input.Doc)
	}
}

// Anchors, aliases and merge keys are YAML users' tools for sharing
// fragments; multi-document files and several files form one spec.
func TestYAMLFeatures(t *testing.T) {
	s, err := loadSrc(t,
		"a.yaml", `
version: 1
tools:
  base: &base {input: {type: object}, output: ok, requireApproval: true}
  derived: {<<: *base, description: derived}
---
version: 1
models: {m: {provider: scripted, turns: [{text: hi}]}}
`,
		"b.yaml", `
version: 1
agents: {a: {model: m, tools: [base, derived]}}
`)
	if err != nil {
		t.Fatal(err)
	}
	d := s.Tools["derived"]
	if need, _ := d.RequireApproval.IsConst(); !need || d.Description != "derived" || d.Output == nil {
		t.Errorf("merged tool: %+v", d)
	}
}

func TestErrorsAllAtOnce(t *testing.T) {
	_, err := loadSrc(t,
		"a.yaml", `
version: 2
tools:
  t: {output: "${{ input. }}", bogus: 1}
agents:
  a: {model: nope, tools: [t, u]}
`,
		"b.yaml", `
version: 1
tools:
  t: {output: again}
models:
  m: {provider: scripted, turns: [{text: x}], apiKey: k}
  o: {provider: openai}
`)
	got := errorLines(t, err)
	want := []string{
		`a.yaml:2:10: version: value must be 1`,
		`a.yaml:4:16: expression "input.": unexpected end of expression (column 6)`,
		`a.yaml:4:32: tools.t.bogus: unknown field`,
		`a.yaml:6:14: unknown model "nope" (declared: m, o)`,
		`a.yaml:6:31: unknown tool "u" (declared: t)`,
		`b.yaml:4:3: tool "t" is already defined at a.yaml:4:3`,
		`b.yaml:6:47: models.m.apiKey: not used by provider scripted`,
		`b.yaml:7:3: model "o": provider openai needs model (the provider's model name)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestYAMLErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"version: 1\ntools:\n  t: {output: a}\n  t: {output: b}\n", `a.yaml:4:3: duplicate key "t"`},
		{"version: 1\n? [a]\n: b\n", `a.yaml:2:3: keys must be strings`},
		{"", `a.yaml: no spec document: the file is empty`},
		{"- 1\n", `a.yaml:1:1: got array, want object`},
		{"version: 1\ntools: {t: 5}\n", `a.yaml:2:12: tools.t: got number, want object`},
		{"version: 1\nx: &a [*a]\n", `a.yaml:2:8: alias *a refers to itself`},
	} {
		_, err := loadSrc(t, "a.yaml", tc.src)
		if got := errorLines(t, err); !slices.Contains(got, tc.want) {
			t.Errorf("%q: got\n%s\nwant a line %s", tc.src, strings.Join(got, "\n"), tc.want)
		}
	}
}

func TestLoadFilesDirectory(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tools.yaml"), []byte("version: 1\ntools: {t: {output: ok}}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "agents.yml"), []byte("version: 1\nmodels: {m: {provider: scripted, turns: [{text: x}]}}\nagents: {a: {model: m, tools: [t]}}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not yaml {"), 0o644)
	s, err := LoadFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Sources) != 2 || s.Agents["a"] == nil || s.Tools["t"] == nil {
		t.Errorf("loaded %d files: %+v", len(s.Sources), s)
	}
	if _, err := LoadFiles(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no *.yaml or *.yml files") {
		t.Errorf("empty directory: %v", err)
	}
}

// FuzzLoad: no input makes Load panic, and every rejection carries a
// position in the file.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob("../examples/agents/*.yaml")
	for _, s := range seeds {
		b, _ := os.ReadFile(s)
		f.Add(b)
	}
	f.Add([]byte("version: 1\ntools: {t: {output: '${{ input.x }}'}}\n"))
	f.Add([]byte("version: 1\nagents: {a: {model: [1], tools: {x: 1}}}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("a: &a [1, 2]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Load([]Source{{Name: "f.yaml", Data: data}})
		var es Errors
		if err != nil && !errors.As(err, &es) {
			t.Fatalf("error without positions: %v", err)
		}
		for _, e := range es {
			if e.Pos.File != "f.yaml" && e.Pos.File != "spec" {
				t.Fatalf("error not placed in the file: %v", e)
			}
		}
	})
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"a": true, "restart_service": true, "db-admin2": true, strings.Repeat("x", 64): true,
		"": false, "2fast": false, "_x": false, "bad name": false, "é": false, "a.b": false, strings.Repeat("x", 65): false,
	} {
		if validName(name) != want {
			t.Errorf("validName(%q) = %v, want %v", name, !want, want)
		}
	}
}

// docs/reference/spec.md is Reference's output: the reference cannot
// drift from the schema (make docs writes it anew).
func TestReferenceUpToDate(t *testing.T) {
	want, err := Reference()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../docs/reference/spec.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("docs/reference/spec.md is not the reference the schema makes: run make docs")
	}
}
