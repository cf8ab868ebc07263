package spec

import (
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/spec/tmpl"
)

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
	if n := field(v, "input"); n != nil {
		t.Input = d.jsonSchema(f, n, path+".input")
		if typ, ok := t.Input.Doc["type"]; ok && typ != "object" {
			d.errs.add(f.pos(field(n, "type")), "%s.input.type: tool arguments are an object; want type: object", path)
		}
	} else {
		t.Input = d.jsonSchema(f, nil, path+".input")
		t.Input.Pos = t.Pos
	}
	if n := field(v, "resumeSchema"); n != nil {
		t.ResumeSchema = d.jsonSchema(f, n, path+".resumeSchema")
	}
	d.toolPolicy(f, v, t, path)
	d.toolPause(f, v, t, path)
	d.toolAction(f, v, t, path)
	d.toolPreview(f, v, t, path)
	d.toolReads(f, v, t, path)
	return t
}

// toolPolicy decodes who decides a tool's calls, when and how many.
func (d *decoder) toolPolicy(f *file, v *yaml.Node, t *Tool, path string) {
	t.Idempotent = boolean(field(v, "idempotent"))
	t.Approvers = d.approvers(f, field(v, "approvers"), path+".approvers")
	t.SeparateDuties = boolean(field(v, "separateDuties"))
	t.RequireReason = boolean(field(v, "requireReason"))
	t.Approvals = 1
	if n := scalar(field(v, "approvals")); n != nil {
		if a, err := strconv.Atoi(n.Value); err == nil && a > 0 {
			t.Approvals = a
		}
	}
	t.RequireApproval = d.condition(f, field(v, "requireApproval"), path+".requireApproval", approvalVars, map[string]*Schema{"input": t.Input})
	t.ApprovalTimeout = d.duration(f, field(v, "approvalTimeout"), path+".approvalTimeout")
	t.Escalation = d.escalation(f, field(v, "escalation"), path+".escalation")
}

// toolPause decodes when a tool suspends itself or is skipped.
func (d *decoder) toolPause(f *file, v *yaml.Node, t *Tool, path string) {
	typed := map[string]*Schema{"input": t.Input, "resume": t.ResumeSchema}
	if n := field(v, "suspend"); n != nil && n.Kind == yaml.MappingNode {
		sp := &Suspend{Pos: f.pos(n), When: d.condition(f, field(n, "when"), path+".suspend.when", toolVars, typed)}
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
		t.Skip = &Skip{When: d.condition(f, field(n, "when"), path+".skip.when", toolVars, typed)}
		if on := scalar(field(n, "output")); on != nil {
			t.Skip.Output = d.template(f, on, toolVars)
		}
	}
}

// toolAction decodes a tool's one action: exec, http, file, output or
// mcp.
func (d *decoder) toolAction(f *file, v *yaml.Node, t *Tool, path string) {
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
		t.Exec = d.execAction(f, n, t, path+".exec")
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
}

// execAction decodes an exec action of tool t (its own, or its
// preview's), with the check of placeholders where options go.
func (d *decoder) execAction(f *file, n *yaml.Node, t *Tool, path string) *Exec {
	e := d.exec(f, n, path)
	if !e.Shell && !d.trusted {
		d.optionPlaceholders(f, items(field(n, "command")), t, path+".command")
	}
	return e
}

func (d *decoder) exec(f *file, n *yaml.Node, path string) *Exec {
	e := &Exec{Dir: str(field(n, "dir")), Shell: boolean(field(n, "shell"))}
	if dn := scalar(field(n, "dir")); dn != nil && tmpl.Has(dn.Value) && !d.trusted {
		d.errs.add(f.pos(dn), "%s.dir: a working directory takes no placeholders: write it out (a command can cd into a directory it is given)", path)
	}
	for _, c := range items(field(n, "command")) {
		if c = scalar(c); c != nil {
			e.Command = append(e.Command, d.template(f, c, actionVars))
		}
	}
	if !e.Shell && !d.trusted {
		d.shellPlaceholders(f, items(field(n, "command")), path+".command")
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
	e.InheritEnv = d.envNames(f, field(n, "inheritEnv"), path+".inheritEnv")
	e.Timeout = d.duration(f, field(n, "timeout"), path+".timeout")
	e.MaxOutput = d.size(f, field(n, "maxOutput"), path+".maxOutput")
	return e
}

func (d *decoder) mcp(f *file, n *yaml.Node, path string) *MCP {
	m := &MCP{URL: str(field(n, "url")), AutoApproveReadOnly: boolean(field(n, "autoApproveReadOnly")),
		Env: d.templates(f, field(n, "env"), envVars), Tools: map[string]tmpl.Expr{},
		InheritEnv: d.envNames(f, field(n, "inheritEnv"), path+".inheritEnv")}
	if un := scalar(field(n, "url")); un != nil && tmpl.Has(un.Value) && !d.trusted {
		d.errs.add(f.pos(un), "%s.url: takes no placeholders: write the server's URL out", path)
	}
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
	m.RequireApproval = d.condition(f, field(n, "requireApproval"), path+".requireApproval", mcpVars, nil)
	for k, v := range pairs(field(n, "tools")) {
		m.Tools[k.Value] = d.condition(f, field(v, "requireApproval"), path+".tools."+k.Value+".requireApproval", mcpVars, nil)
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
	fo.RootAsWritten = fo.Root
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
