package spec

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/spec/tmpl"
)

// decoder builds a Spec from schema-valid files and checks its meaning.
type decoder struct {
	spec     *Spec
	errs     *Errors
	trusted  bool // decoding a snapshot Load accepted before: see Reload
	compiler *jsonschema.Compiler
	schemas  int // schemas compiled, for unique resource names
	refs     []ref
}

// ref is a by-name reference, checked once every file is decoded.
type ref struct {
	pos  Pos
	kind string // "model" or "tool"
	name string
}

// validName reports whether s is a valid model, tool or agent name: what
// model APIs accept as a function name (^[A-Za-z][A-Za-z0-9_-]{0,63}$).
func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i, c := range []byte(s) {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '_' || c == '-')) {
			return false
		}
	}
	return true
}

func (d *decoder) file(f *file) {
	for _, section := range []string{"models", "tools", "agents"} {
		for k := range pairs(field(f.root, section)) {
			if !validName(k.Value) {
				d.errs.add(f.pos(k), "%s.%s: invalid name: use letters, digits, '_' and '-', starting with a letter (at most 64)", section, k.Value)
			}
		}
	}
	for k, v := range pairs(field(f.root, "models")) {
		m := d.model(f, k, v)
		if prev, ok := d.spec.Models[m.Name]; ok {
			d.errs.add(m.Pos, "model %q is already defined at %s", m.Name, prev.Pos)
			continue
		}
		d.spec.Models[m.Name] = m
	}
	for k, v := range pairs(field(f.root, "tools")) {
		t := d.tool(f, k, v)
		if prev, ok := d.spec.Tools[t.Name]; ok {
			d.errs.add(t.Pos, "tool %q is already defined at %s", t.Name, prev.Pos)
			continue
		}
		d.spec.Tools[t.Name] = t
	}
	for k, v := range pairs(field(f.root, "agents")) {
		a := d.agent(f, k, v)
		if prev, ok := d.spec.Agents[a.Name]; ok {
			d.errs.add(a.Pos, "agent %q is already defined at %s", a.Name, prev.Pos)
			continue
		}
		d.spec.Agents[a.Name] = a
	}
}

func (d *decoder) model(f *file, k, v *yaml.Node) *Model {
	v = deref(v)
	m := &Model{
		Name:     k.Value,
		Pos:      f.pos(k),
		Provider: str(field(v, "provider")),
		Model:    str(field(v, "model")),
		BaseURL:  str(field(v, "baseURL")),
	}
	if v.Kind != yaml.MappingNode {
		return m // the schema reports it
	}
	if n := scalar(field(v, "apiKey")); n != nil {
		m.APIKey = d.template(f, n, modelVars)
	}
	turns := items(field(v, "turns"))
	switch m.Provider {
	case ProviderScripted:
		if len(turns) == 0 && field(v, "turns") == nil {
			d.errs.add(m.Pos, "model %q: a scripted model needs turns", m.Name)
		}
		for _, key := range []string{"model", "baseURL", "apiKey"} {
			if kn := keyNode(v, key); kn != nil {
				d.errs.add(f.pos(kn), "models.%s.%s: not used by provider scripted", m.Name, key)
			}
		}
	case ProviderOpenAI:
		if m.Model == "" {
			d.errs.add(m.Pos, "model %q: provider openai needs model (the provider's model name)", m.Name)
		}
		if field(v, "turns") != nil {
			d.errs.add(f.pos(keyNode(v, "turns")), "models.%s.turns: only provider scripted has turns", m.Name)
		}
	}
	for _, tn := range turns {
		m.Turns = append(m.Turns, d.turn(f, tn))
	}
	return m
}

func (d *decoder) turn(f *file, n *yaml.Node) *Turn {
	t := &Turn{Pos: f.pos(n)}
	if n.Kind != yaml.MappingNode {
		return t // the schema reports it
	}
	text, calls := field(n, "text"), field(n, "toolCalls")
	if (text == nil) == (calls == nil) {
		d.errs.add(t.Pos, "a turn has either text or toolCalls")
	}
	if text = scalar(text); text != nil {
		t.Text = d.template(f, text, turnVars)
	}
	for _, cn := range items(calls) {
		c := &ScriptedCall{Pos: f.pos(cn), Tool: str(field(cn, "tool"))}
		if an := field(cn, "args"); an != nil {
			c.Args, _ = f.value(an, d.errs).(map[string]any)
		}
		d.ref(f, field(cn, "tool"), "tool")
		t.ToolCalls = append(t.ToolCalls, c)
	}
	return t
}

func (d *decoder) tool(f *file, k, v *yaml.Node) *Tool {
	v = deref(v)
	t := &Tool{
		Name:            k.Value,
		Pos:             f.pos(k),
		Description:     str(field(v, "description")),
		RequireApproval: boolean(field(v, "requireApproval")),
		Input:           map[string]any{"type": "object"},
	}
	if v.Kind != yaml.MappingNode {
		return t // the schema reports it
	}
	n := field(v, "input")
	if n == nil {
		// the default: any object
	} else if in, ok := f.value(n, d.errs).(map[string]any); ok {
		t.Input = in
		if typ, ok := in["type"]; ok && typ != "object" {
			d.errs.add(f.pos(field(n, "type")), "tools.%s.input.type: tool arguments are an object; want type: object", t.Name)
		}
	}
	switch {
	case d.trusted:
		in := t.Input
		t.schema = sync.OnceValues(func() (*jsonschema.Schema, error) { return compileSchema(in) })
	case n == nil || n.Kind == yaml.MappingNode:
		if sch := d.schema(f, n, "tools/"+t.Name+"/input", t.Input); sch != nil {
			t.schema = func() (*jsonschema.Schema, error) { return sch, nil }
		}
	}
	exec, out := field(v, "exec"), field(v, "output")
	switch {
	case exec == nil && out == nil:
		d.errs.add(t.Pos, "tool %q has no action: declare exec or output", t.Name)
	case exec != nil && out != nil:
		d.errs.add(t.Pos, "tool %q has two actions: declare exec or output, not both", t.Name)
	}
	if out = scalar(out); out != nil {
		t.Output = d.template(f, out, toolVars)
	}
	if exec != nil {
		t.Exec = &Exec{Dir: str(field(exec, "dir"))}
		for _, c := range items(field(exec, "command")) {
			if c = scalar(c); c != nil {
				t.Exec.Command = append(t.Exec.Command, d.template(f, c, toolVars))
			}
		}
		if tn := scalar(field(exec, "timeout")); tn != nil {
			dur, err := time.ParseDuration(tn.Value)
			switch {
			case err != nil:
				d.errs.add(f.pos(tn), "tools.%s.exec.timeout: invalid duration %q (want e.g. 30s, 5m, 1h30m)", t.Name, tn.Value)
			case dur <= 0:
				d.errs.add(f.pos(tn), "tools.%s.exec.timeout: must be positive", t.Name)
			}
			t.Exec.Timeout = dur
		}
	}
	return t
}

func (d *decoder) agent(f *file, k, v *yaml.Node) *Agent {
	v = deref(v)
	a := &Agent{
		Name:                k.Value,
		Pos:                 f.pos(k),
		Description:         str(field(v, "description")),
		Model:               str(field(v, "model")),
		Instructions:        str(field(v, "instructions")),
		MaxSteps:            DefaultMaxSteps,
		RequireToolApproval: boolean(field(v, "requireToolApproval")),
	}
	d.ref(f, field(v, "model"), "model")
	for _, tn := range items(field(v, "tools")) {
		if d.ref(f, tn, "tool") {
			a.Tools = append(a.Tools, tn.Value)
		}
	}
	if n := scalar(field(v, "maxSteps")); n != nil {
		a.MaxSteps, _ = strconv.Atoi(n.Value)
	}
	return a
}

// ref records a by-name reference held by scalar n, to check once every
// file is decoded. It reports whether n is such a scalar.
func (d *decoder) ref(f *file, n *yaml.Node, kind string) bool {
	if n = scalar(n); n == nil || n.Tag != "!!str" {
		return false // missing or of the wrong type: the schema reports it
	}
	d.refs = append(d.refs, ref{pos: f.pos(n), kind: kind, name: n.Value})
	return true
}

// check resolves references once every file is decoded.
func (d *decoder) check() {
	for _, r := range d.refs {
		var names []string
		switch r.kind {
		case "model":
			if _, ok := d.spec.Models[r.name]; ok {
				continue
			}
			names = slices.Sorted(maps.Keys(d.spec.Models))
		case "tool":
			if _, ok := d.spec.Tools[r.name]; ok {
				continue
			}
			names = slices.Sorted(maps.Keys(d.spec.Tools))
		}
		known := "none are declared"
		if len(names) > 0 {
			known = "declared: " + strings.Join(names, ", ")
		}
		d.errs.add(r.pos, "unknown %s %q (%s)", r.kind, r.name, known)
	}
}

// template compiles a scalar that may hold placeholders.
func (d *decoder) template(f *file, n *yaml.Node, vars tmpl.Vars) *tmpl.String {
	t, err := tmpl.Parse(n.Value, vars)
	if err != nil {
		var te *tmpl.Error
		if errors.As(err, &te) {
			d.errs.add(f.offsetPos(n, te.Offset), "%v", err)
		} else {
			d.errs.add(f.pos(n), "%v", err)
		}
		return nil
	}
	return t
}

// schema compiles a JSON Schema written at node n.
func (d *decoder) schema(f *file, n *yaml.Node, name string, doc map[string]any) *jsonschema.Schema {
	if d.compiler == nil {
		d.compiler = jsonschema.NewCompiler()
	}
	d.schemas++
	url := fmt.Sprintf("mem:///%d/%s", d.schemas, name)
	if err := d.compiler.AddResource(url, doc); err != nil {
		d.errs.add(f.pos(n), "invalid JSON Schema: %v", err)
		return nil
	}
	sch, err := d.compiler.Compile(url)
	if err == nil {
		return sch
	}
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		for _, v := range Violations(ve) {
			at := lookup(n, v.Path)
			if v.Key != "" {
				if k := keyNode(at, v.Key); k != nil {
					at = k
				}
			}
			d.errs.add(f.pos(at), "invalid JSON Schema at %s: %s", v.Pointer(), v.Msg)
		}
		return nil
	}
	d.errs.add(f.pos(n), "invalid JSON Schema: %s", strings.ReplaceAll(err.Error(), url, name))
	return nil
}

// compileSchema compiles a JSON Schema on its own.
func compileSchema(doc map[string]any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem:///input", doc); err != nil {
		return nil, err
	}
	return c.Compile("mem:///input")
}

func str(n *yaml.Node) string {
	if n = scalar(n); n == nil {
		return ""
	}
	return n.Value
}

func boolean(n *yaml.Node) bool {
	var b bool
	if n = scalar(n); n != nil {
		_ = n.Decode(&b) // a wrong type is the schema's to report
	}
	return b
}
