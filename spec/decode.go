package spec

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	for _, n := range items(field(field(f.root, "policy"), "delegates")) {
		if n = scalar(n); n != nil && n.Value != "" && !slices.Contains(d.spec.Policy.Delegates, n.Value) {
			d.spec.Policy.Delegates = append(d.spec.Policy.Delegates, n.Value)
		}
	}
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
	m.Retries = -1
	if n := scalar(field(v, "retries")); n != nil {
		m.Retries, _ = strconv.Atoi(n.Value)
	}
	if n := scalar(field(v, "maxTokens")); n != nil {
		m.MaxTokens, _ = strconv.Atoi(n.Value)
	}
	if n := scalar(field(v, "temperature")); n != nil {
		if t, err := strconv.ParseFloat(n.Value, 64); err == nil {
			m.Temperature = &t
		}
	}
	m.Timeout = d.duration(f, field(v, "timeout"), "models."+m.Name+".timeout")
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
	case ProviderReplay:
		cn := scalar(field(v, "cassette"))
		if cn == nil {
			d.errs.add(m.Pos, "model %q: provider replay needs cassette (a file recorded with --record)", m.Name)
		} else {
			m.Cassette = cn.Value
			if !filepath.IsAbs(m.Cassette) {
				m.Cassette = filepath.Join(f.dir, m.Cassette)
			}
		}
	}
	if Hosted(m.Provider) {
		if m.Model == "" {
			d.errs.add(m.Pos, "model %q: provider %s needs model (the provider's model name)", m.Name, m.Provider)
		}
		if m.BaseURL != "" {
			if u, err := url.Parse(m.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				d.errs.add(f.pos(field(v, "baseURL")), "models.%s.baseURL: %q is not an http(s) URL", m.Name, m.BaseURL)
			}
		}
	}
	if m.Provider != ProviderScripted && field(v, "turns") != nil {
		d.errs.add(f.pos(keyNode(v, "turns")), "models.%s.turns: only provider scripted has turns", m.Name)
	}
	if m.Provider != ProviderReplay && field(v, "cassette") != nil {
		d.errs.add(f.pos(keyNode(v, "cassette")), "models.%s.cassette: only provider replay has a cassette", m.Name)
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
		if an := field(cn, "args"); an != nil && an.Kind == yaml.MappingNode {
			c.Args = d.value(f, an, turnVars)
		}
		if d.ref(f, field(cn, "tool"), "tool") {
			d.refs[len(d.refs)-1].scripted = true
		}
		t.ToolCalls = append(t.ToolCalls, c)
	}
	return t
}

func (d *decoder) tool(f *file, k, v *yaml.Node) *Tool {
	v = deref(v)
	t := &Tool{
		Name:        k.Value,
		Pos:         f.pos(k),
		Description: str(field(v, "description")),
		Input:       &Schema{Doc: map[string]any{"type": "object"}, Pos: f.pos(k)},
	}
	if v.Kind != yaml.MappingNode {
		return t // the schema reports it
	}
	path := "tools." + t.Name
	t.Idempotent = boolean(field(v, "idempotent"))
	t.Approvers = approvers(field(v, "approvers"))
	t.SeparateDuties = boolean(field(v, "separateDuties"))
	t.Approvals = 1
	if n := scalar(field(v, "approvals")); n != nil {
		if a, err := strconv.Atoi(n.Value); err == nil && a > 0 {
			t.Approvals = a
		}
	}
	if n := field(v, "input"); n != nil {
		t.Input = d.jsonSchema(f, n, path+".input")
		if typ, ok := t.Input.Doc["type"]; ok && typ != "object" {
			d.errs.add(f.pos(field(n, "type")), "%s.input.type: tool arguments are an object; want type: object", path)
		}
	} else {
		t.Input = d.jsonSchema(f, nil, path+".input")
		t.Input.Pos = t.Pos
	}
	t.RequireApproval = d.condition(f, field(v, "requireApproval"), path+".requireApproval", approvalVars)
	t.ApprovalTimeout = d.duration(f, field(v, "approvalTimeout"), path+".approvalTimeout")
	if n := field(v, "resumeSchema"); n != nil {
		t.ResumeSchema = d.jsonSchema(f, n, path+".resumeSchema")
	}
	if n := field(v, "suspend"); n != nil && n.Kind == yaml.MappingNode {
		sp := &Suspend{Pos: f.pos(n), When: d.condition(f, field(n, "when"), path+".suspend.when", toolVars)}
		if sn := field(n, "schema"); sn != nil {
			sp.Schema = d.jsonSchema(f, sn, path+".suspend.schema")
		}
		if pn := field(n, "payload"); pn != nil {
			sp.Payload = d.value(f, pn, toolVars)
			if sp.Payload != nil && sp.Payload.Literal() && sp.Schema != nil && sp.Schema.compiled != nil {
				// A payload without placeholders is checked now, not at run time.
				p, _ := sp.Payload.Eval(nil)
				if err := sp.Schema.Validate(p); err != nil {
					d.violations(f, pn, path+".suspend.payload: does not satisfy suspend.schema", err)
				}
			}
		}
		t.Suspend = sp
	}
	if n := field(v, "skip"); n != nil && n.Kind == yaml.MappingNode {
		t.Skip = &Skip{When: d.condition(f, field(n, "when"), path+".skip.when", toolVars)}
		if on := scalar(field(n, "output")); on != nil {
			t.Skip.Output = d.template(f, on, toolVars)
		}
	}
	var actions []string
	for _, k := range []string{"exec", "http", "file", "output", "mcp"} {
		if field(v, k) != nil {
			actions = append(actions, k)
		}
	}
	switch len(actions) {
	case 0:
		d.errs.add(t.Pos, "tool %q has no action: declare exec, http, file, output or mcp", t.Name)
	case 1:
	default:
		d.errs.add(t.Pos, "tool %q has %d actions (%s): declare one", t.Name, len(actions), strings.Join(actions, ", "))
	}
	if out := scalar(field(v, "output")); out != nil {
		t.Output = d.template(f, out, actionVars)
	}
	if n := field(v, "exec"); n != nil && n.Kind == yaml.MappingNode {
		t.Exec = d.exec(f, n, path+".exec")
	}
	if n := field(v, "http"); n != nil && n.Kind == yaml.MappingNode {
		t.HTTP = d.http(f, n, path+".http")
	}
	if n := field(v, "file"); n != nil && n.Kind == yaml.MappingNode {
		t.File = d.fileOp(f, n, path+".file")
	}
	if n := field(v, "mcp"); n != nil && n.Kind == yaml.MappingNode {
		t.MCP = d.mcp(f, n, path+".mcp")
		for _, k := range []string{"input", "requireApproval", "suspend", "resumeSchema", "skip"} {
			if kn := keyNode(v, k); kn != nil {
				d.errs.add(f.pos(kn), "%s.%s: an MCP server's tools take their input schema from the server; set approval under mcp (requireApproval, tools)", path, k)
			}
		}
	}
	return t
}

func (d *decoder) exec(f *file, n *yaml.Node, path string) *Exec {
	e := &Exec{Dir: str(field(n, "dir")), Shell: boolean(field(n, "shell"))}
	for _, c := range items(field(n, "command")) {
		if c = scalar(c); c != nil {
			e.Command = append(e.Command, d.template(f, c, actionVars))
		}
	}
	if e.Shell {
		cmd := items(field(n, "command"))
		switch {
		case len(cmd) != 1:
			d.errs.add(f.pos(field(n, "command")), "%s.command: with shell: true, the command is one script", path)
		case tmpl.Has(cmd[0].Value):
			d.errs.add(f.pos(cmd[0]), "%s.command: a shell script takes no placeholders; pass values through env and use \"$NAME\"", path)
		}
	}
	e.Env = d.templates(f, field(n, "env"), actionVars)
	e.Timeout = d.duration(f, field(n, "timeout"), path+".timeout")
	e.MaxOutput = d.size(f, field(n, "maxOutput"), path+".maxOutput")
	return e
}

func (d *decoder) mcp(f *file, n *yaml.Node, path string) *MCP {
	m := &MCP{URL: str(field(n, "url")), AutoApproveReadOnly: boolean(field(n, "autoApproveReadOnly")),
		Env: d.templates(f, field(n, "env"), envVars), Tools: map[string]tmpl.Expr{}}
	for _, c := range items(field(n, "command")) {
		if c = scalar(c); c != nil {
			if tmpl.Has(c.Value) {
				d.errs.add(f.pos(c), "%s.command: takes no placeholders; pass values through env", path)
			}
			m.Command = append(m.Command, c.Value)
		}
	}
	if (len(m.Command) == 0) == (m.URL == "") {
		d.errs.add(f.pos(n), "%s: declare command (stdio) or url (streamable HTTP), one of them", path)
	}
	m.RequireApproval = d.condition(f, field(n, "requireApproval"), path+".requireApproval", mcpVars)
	for k, v := range pairs(field(n, "tools")) {
		m.Tools[k.Value] = d.condition(f, field(v, "requireApproval"), path+".tools."+k.Value+".requireApproval", mcpVars)
	}
	return m
}

func (d *decoder) http(f *file, n *yaml.Node, path string) *HTTP {
	h := &HTTP{Method: str(field(n, "method")), Query: d.templates(f, field(n, "query"), actionVars),
		Headers: d.templates(f, field(n, "headers"), actionVars)}
	if h.Method == "" {
		h.Method = "GET"
	}
	if un := scalar(field(n, "url")); un != nil {
		h.URL = d.template(f, un, actionVars)
		origin, ok := literalOrigin(un.Value)
		if !ok {
			d.errs.add(f.pos(un), "%s.url: scheme and host must be written out (http:// or https://, then a host without placeholders)", path)
		}
		h.Origin = origin
	}
	if bn := field(n, "body"); bn != nil {
		h.Body = d.value(f, bn, actionVars)
	}
	h.Timeout = d.duration(f, field(n, "timeout"), path+".timeout")
	h.MaxResponse = d.size(f, field(n, "maxResponse"), path+".maxResponse")
	return h
}

// literalOrigin returns scheme://host[:port] of a URL template, provided
// they hold no placeholder and no user info.
func literalOrigin(raw string) (string, bool) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || (scheme != "http" && scheme != "https") {
		return "", false
	}
	host := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		host = rest[:i]
	}
	if host == "" || strings.ContainsAny(host, "@$ {}") {
		return "", false
	}
	return scheme + "://" + host, true
}

func (d *decoder) fileOp(f *file, n *yaml.Node, path string) *File {
	fo := &File{Op: str(field(n, "op")), Root: str(field(n, "root"))}
	if rn := scalar(field(n, "root")); rn != nil {
		if tmpl.Has(rn.Value) {
			d.errs.add(f.pos(rn), "%s.root: a root takes no placeholders", path)
		}
		if !filepath.IsAbs(fo.Root) {
			fo.Root = filepath.Join(f.dir, fo.Root)
		}
		if abs, err := filepath.Abs(fo.Root); err == nil {
			fo.Root = abs
		}
	}
	if pn := scalar(field(n, "path")); pn != nil {
		fo.Path = d.template(f, pn, actionVars)
		if filepath.IsAbs(pn.Value) || !tmpl.Has(pn.Value) && !filepath.IsLocal(pn.Value) {
			d.errs.add(f.pos(pn), "%s.path: %q is outside root: give a path relative to root, without ..", path, pn.Value)
		}
	}
	cn := scalar(field(n, "content"))
	switch {
	case cn != nil && fo.Op != "write":
		d.errs.add(f.pos(cn), "%s.content: only op write takes content", path)
	case cn == nil && fo.Op == "write":
		d.errs.add(f.pos(n), "%s: op write needs content", path)
	case cn != nil:
		fo.Content = d.template(f, cn, actionVars)
	}
	return fo
}

// templates compiles a map of strings that may hold placeholders.
func (d *decoder) templates(f *file, n *yaml.Node, vars tmpl.Vars) map[string]*tmpl.String {
	out := map[string]*tmpl.String{}
	for k, v := range pairs(n) {
		if v = scalar(v); v != nil {
			out[k.Value] = d.template(f, v, vars)
		}
	}
	return out
}

// size decodes a byte count: 65536, "64KiB", "1MiB", "10MB"; 0 when absent.
func (d *decoder) size(f *file, n *yaml.Node, path string) int64 {
	if n = scalar(n); n == nil {
		return 0
	}
	s := strings.TrimSpace(n.Value)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 {
		d.errs.add(f.pos(n), "%s: invalid size %q (want e.g. 65536, 64KiB, 1MiB)", path, n.Value)
		return 0
	}
	return v * mult
}

// duration decodes a positive duration such as 30s or 24h; 0 when absent.
func (d *decoder) duration(f *file, n *yaml.Node, path string) time.Duration {
	if n = scalar(n); n == nil || n.Tag != "!!str" {
		return 0 // absent, or of the wrong type: the schema reports it
	}
	dur, err := time.ParseDuration(n.Value)
	switch {
	case err != nil:
		d.errs.add(f.pos(n), "%s: invalid duration %q (want e.g. 30s, 5m, 1h30m)", path, n.Value)
	case dur <= 0:
		d.errs.add(f.pos(n), "%s: must be positive", path)
	}
	return dur
}

// condition decodes true, false or one ${{ expression }}; absent is false.
func (d *decoder) condition(f *file, n *yaml.Node, path string, vars tmpl.Vars) tmpl.Expr {
	if n = scalar(n); n == nil {
		return tmpl.Const(false)
	}
	if n.Tag == "!!bool" {
		return tmpl.Const(boolean(n))
	}
	if n.Tag != "!!str" {
		return tmpl.Const(false) // the schema reports it
	}
	if !tmpl.Has(n.Value) {
		d.errs.add(f.pos(n), "%s: want true, false or ${{ expression }}, not %q", path, n.Value)
		return tmpl.Const(false)
	}
	e, err := tmpl.ParseExpr(n.Value, vars)
	var te *tmpl.Error
	if errors.As(err, &te) && te.Expr == "" && te.Offset == 0 {
		d.errs.add(f.pos(n), "%s: %s", path, te.Msg)
	} else if err != nil {
		d.placeholderError(f, n, err)
	}
	return e
}

// value compiles a tree of values whose strings may hold placeholders.
func (d *decoder) value(f *file, n *yaml.Node, vars tmpl.Vars) *tmpl.Value {
	v, err := tmpl.ParseValue(f.value(n, d.errs), vars)
	if err != nil {
		var pe *tmpl.PathError
		if errors.As(err, &pe) {
			d.placeholderError(f, lookup(n, pe.Path), pe.Err)
		} else {
			d.errs.add(f.pos(n), "%v", err)
		}
		return nil
	}
	return v
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
		AutoResume:          boolean(field(v, "autoResume")),
		Approvers:           approvers(field(v, "approvers")),
		SeparateDuties:      boolean(field(v, "separateDuties")),
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
	a.MaxDepth = DefaultMaxDepth
	if n := scalar(field(v, "maxDepth")); n != nil {
		a.MaxDepth, _ = strconv.Atoi(n.Value)
	}
	for _, sn := range items(field(v, "agents")) {
		if d.ref(f, sn, "agent") {
			a.Agents = append(a.Agents, sn.Value)
			a.SubPos = append(a.SubPos, f.pos(sn))
			if slices.Contains(a.Tools, sn.Value) {
				d.errs.add(f.pos(sn), "agent %q has a tool and a sub-agent named %q: a model cannot tell them apart", a.Name, sn.Value)
			}
		}
	}
	a.ApprovalTimeout = d.duration(f, field(v, "approvalTimeout"), "agents."+a.Name+".approvalTimeout")
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

// template compiles a scalar that may hold placeholders.
func (d *decoder) template(f *file, n *yaml.Node, vars tmpl.Vars) *tmpl.String {
	t, err := tmpl.Parse(n.Value, vars)
	if err != nil {
		d.placeholderError(f, n, err)
		return nil
	}
	return t
}

// placeholderError reports an error in the placeholders of scalar n.
func (d *decoder) placeholderError(f *file, n *yaml.Node, err error) {
	var te *tmpl.Error
	if errors.As(err, &te) {
		d.errs.add(f.offsetPos(n, te.Offset), "%v", err)
	} else {
		d.errs.add(f.pos(n), "%v", err)
	}
}

// jsonSchema decodes a JSON Schema written at node n (nil: any object)
// and, unless the spec is trusted, compiles it now to report its errors.
func (d *decoder) jsonSchema(f *file, n *yaml.Node, path string) *Schema {
	doc := map[string]any{"type": "object"}
	if n != nil {
		var ok bool
		if doc, ok = f.value(n, d.errs).(map[string]any); !ok {
			return &Schema{Doc: doc, Pos: f.pos(n)} // the spec schema reports it
		}
	}
	if d.trusted {
		return lazySchema(doc, f.pos(n))
	}
	s := &Schema{Doc: doc, Pos: f.pos(n)}
	if d.compiler == nil {
		d.compiler = jsonschema.NewCompiler()
	}
	d.schemas++
	url := fmt.Sprintf("mem:///%d/%s", d.schemas, path)
	if err := d.compiler.AddResource(url, doc); err != nil {
		d.errs.add(f.pos(n), "%s: invalid JSON Schema: %v", path, err)
		return s
	}
	sch, err := d.compiler.Compile(url)
	if err == nil {
		s.compiled = func() (*jsonschema.Schema, error) { return sch, nil }
		return s
	}
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		d.violations(f, n, path+": invalid JSON Schema", sve.Err)
		return s
	}
	d.errs.add(f.pos(n), "%s: invalid JSON Schema: %s", path, strings.ReplaceAll(err.Error(), url, path))
	return s
}

// violations reports each way a value written at n breaks a schema, at
// the node it concerns, as "what at /pointer: message".
func (d *decoder) violations(f *file, n *yaml.Node, what string, err error) {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		d.errs.add(f.pos(n), "%s: %v", what, err)
		return
	}
	for _, v := range Violations(ve) {
		at := lookup(n, v.Path)
		if v.Key != "" {
			if k := keyNode(at, v.Key); k != nil {
				at = k
			}
		}
		d.errs.add(f.pos(at), "%s at %s: %s", what, v.Pointer(), v.Msg)
	}
}

func str(n *yaml.Node) string {
	if n = scalar(n); n == nil {
		return ""
	}
	return n.Value
}

// approvers reads a list of approvers; the schema checks its shape.
func approvers(n *yaml.Node) Approvers {
	var a Approvers
	for _, it := range items(n) {
		if it = scalar(it); it == nil || it.Value == "" {
			continue
		}
		if g, ok := strings.CutPrefix(it.Value, "group:"); ok {
			a.Groups = append(a.Groups, g)
		} else {
			a.Users = append(a.Users, it.Value)
		}
	}
	return a
}

func boolean(n *yaml.Node) bool {
	var b bool
	if n = scalar(n); n != nil {
		_ = n.Decode(&b) // a wrong type is the schema's to report
	}
	return b
}
