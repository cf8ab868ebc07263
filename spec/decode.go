package spec

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

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
	kind string // "model", "tool" or "agent"
	name string
	// scripted marks a scripted model's tool call, which may also name
	// ResumeTool.
	scripted bool
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
	for i, n := range items(field(field(f.root, "policy"), "delegates")) {
		if n = scalar(n); n != nil && n.Value != "" && d.principal(f, n, fmt.Sprintf("policy.delegates.%d", i), n.Value, false) &&
			!slices.Contains(d.spec.Policy.Delegates, n.Value) {
			d.spec.Policy.Delegates = append(d.spec.Policy.Delegates, n.Value)
			d.spec.Policy.DelegatePos = append(d.spec.Policy.DelegatePos, f.pos(n))
		}
	}
	if n := field(field(f.root, "policy"), "escalation"); n != nil {
		d.spec.Policy.Escalation = d.escalation(f, n, "policy.escalation")
	}
	d.rules(f)
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
			if _, ok := d.spec.Agents[r.name]; ok && r.scripted {
				continue // a delegation to a sub-agent
			}
			if server, _, ok := strings.Cut(r.name, "."); ok && r.scripted {
				if t := d.spec.Tools[server]; t != nil && t.MCP != nil {
					continue // an MCP server's tool, known once the server runs
				}
			}
			if r.scripted && r.name == ResumeTool {
				continue // the resume data extraction of agentctl send
			}
			names = slices.Sorted(maps.Keys(d.spec.Tools))
		case "agent":
			if _, ok := d.spec.Agents[r.name]; ok {
				continue
			}
			names = slices.Sorted(maps.Keys(d.spec.Agents))
		}
		known := "none are declared"
		if len(names) > 0 {
			known = "declared: " + strings.Join(names, ", ")
		}
		d.errs.add(r.pos, "unknown %s %q (%s)", r.kind, r.name, known)
	}
	d.cycles()
	d.escalations()
	d.checkRules()
	if !d.trusted {
		d.scripted()
	}
}

// scripted checks the tool calls of each scripted model an agent uses:
// the agent has the tool (or sub-agent), and arguments written out in full
// satisfy the tool's input schema. A test fails at validate, not at run
// time.
func (d *decoder) scripted() {
	for _, name := range slices.Sorted(maps.Keys(d.spec.Agents)) {
		a := d.spec.Agents[name]
		m := d.spec.Models[a.Model]
		if m == nil || m.Provider != ProviderScripted {
			continue
		}
		for _, turn := range m.Turns {
			for _, c := range turn.ToolCalls {
				d.scriptedCall(a, m, c)
			}
		}
	}
}

// scriptedCall checks one scripted tool call against an agent.
func (d *decoder) scriptedCall(a *Agent, m *Model, c *ScriptedCall) {
	server, _, isMCP := strings.Cut(c.Tool, ".")
	switch {
	case c.Tool == ResumeTool:
		return
	case slices.Contains(a.Agents, c.Tool):
		d.scriptedDelegation(m, c)
		return
	case isMCP && slices.Contains(a.Tools, server):
		return // an MCP server's tool, known once the server runs
	case !slices.Contains(a.Tools, c.Tool):
		if _, declared := d.spec.Tools[c.Tool]; declared || isMCP {
			d.errs.add(c.Pos, "model %s calls tool %q, which agent %s does not have (its tools: %s)",
				m.Name, c.Tool, a.Name, orNone(append(slices.Clone(a.Tools), a.Agents...)))
		}
		return // an undeclared tool is reported as unknown
	}
	t := d.spec.Tools[c.Tool]
	if t == nil || t.MCP != nil || c.Args == nil {
		return
	}
	args, open, ok := literalArgs(c.Args)
	if !ok {
		return
	}
	var ve *jsonschema.ValidationError
	if err := t.Input.Validate(args); errors.As(err, &ve) {
		var msgs []string
		for _, v := range Violations(ve) {
			if !v.about(open) {
				msgs = append(msgs, v.String())
			}
		}
		if len(msgs) > 0 {
			d.errs.add(c.Pos, "model %s calls tool %s with arguments its input schema refuses: %s", m.Name, c.Tool, strings.Join(msgs, "; "))
		}
	}
}

// literalArgs evaluates scripted arguments without their placeholders:
// a top-level field holding one is left out, and named in open, so the
// literal fields beside it are still checked. ok false: nothing to
// check (not an object, or an error).
func literalArgs(v *tmpl.Value) (args any, open []string, ok bool) {
	if v.Literal() {
		args, err := v.Eval(nil)
		return args, nil, err == nil
	}
	fields := v.Fields()
	if fields == nil {
		return nil, nil, false
	}
	obj := map[string]any{}
	for _, name := range fields {
		f, _ := v.Field(name)
		if !f.Literal() {
			open = append(open, name)
			continue
		}
		val, err := f.Eval(nil)
		if err != nil {
			return nil, nil, false
		}
		obj[name] = val
	}
	return obj, open, true
}

// scriptedDelegation checks the arguments of a scripted delegation to a
// sub-agent: {"task": "..."}, what the engine requires of any model.
func (d *decoder) scriptedDelegation(m *Model, c *ScriptedCall) {
	problem := ""
	task, ok := c.Args.Field("task")
	switch {
	case !ok:
		problem = "no task"
		if near := nearest("task", c.Args.Fields()); near != "" {
			problem += fmt.Sprintf(" (%s: did you mean task?)", near)
		}
	case task.Literal():
		v, _ := task.Eval(nil)
		if s, isText := v.(string); !isText {
			problem = "task is not a text"
		} else if strings.TrimSpace(s) == "" {
			problem = "task is blank"
		}
	}
	if problem != "" {
		d.errs.add(c.Pos, `model %s delegates to sub-agent %s with arguments a delegation refuses: %s; a delegation needs {"task": "..."}`, m.Name, c.Tool, problem)
	}
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// cycles reports each cycle of sub-agents once, at the reference that
// closes it.
func (d *decoder) cycles() {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(name string)
	visit = func(name string) {
		a := d.spec.Agents[name]
		if a == nil || state[name] == done {
			return
		}
		state[name] = open
		stack = append(stack, name)
		for i, sub := range a.Agents {
			switch state[sub] {
			case open:
				from := slices.Index(stack, sub)
				cycle := append(slices.Clone(stack[from:]), sub)
				d.errs.add(a.SubPos[i], "sub-agent cycle: %s", strings.Join(cycle, " -> "))
			case unseen:
				visit(sub)
			}
		}
		stack = stack[:len(stack)-1]
		state[name] = done
	}
	for _, name := range slices.Sorted(maps.Keys(d.spec.Agents)) {
		visit(name)
	}
}
