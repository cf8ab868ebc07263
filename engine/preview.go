package engine

import (
	"context"
	"encoding/json"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/toolkits"
)

// ActionView is what a call's tool will do, shown with every call of an
// uploaded spec: the declaration as written (Template), and as its
// toolkit renders it with the call's arguments (Rendered). Environment
// variables show as [env.NAME], never their values.
type ActionView struct {
	// Kind is the toolkit: exec, http, file, output or mcp.
	Kind string `json:"kind"`
	// Summary is the action in one line, as agentctl graph shows it.
	Summary  string            `json:"summary"`
	Template toolkits.Preview  `json:"template"`
	Rendered *toolkits.Preview `json:"rendered,omitempty"`
	// Error is why it could not be rendered; the call fails the same
	// way if it runs.
	Error string `json:"error,omitempty"`
}

// templateOf is a declaration's action as written.
func templateOf(t *spec.Tool) toolkits.Preview {
	var p toolkits.Preview
	switch {
	case t.Exec != nil:
		for _, c := range t.Exec.Command {
			p.Command = append(p.Command, c.Source())
		}
		if t.Exec.Shell {
			p.Command = append([]string{"/bin/sh", "-c"}, p.Command...)
		}
		for k, v := range t.Exec.Env {
			if p.Env == nil {
				p.Env = map[string]string{}
			}
			p.Env[k] = v.Source()
		}
	case t.HTTP != nil:
		p.Method, p.URL = t.HTTP.Method, t.HTTP.URL.Source()
		for k, v := range t.HTTP.Headers {
			if p.Headers == nil {
				p.Headers = map[string]string{}
			}
			p.Headers[k] = v.Source()
		}
		if t.HTTP.Body != nil {
			b, _ := json.Marshal(t.HTTP.Body.Source())
			p.Body = string(b)
		}
	case t.File != nil:
		p.Op, p.Root, p.Path = t.File.Op, t.File.Root, t.File.Path.Source()
		if t.File.Content != nil {
			p.Content = t.File.Content.Source()
		}
	case t.Output != nil:
		p.Text = t.Output.Source()
	}
	return p
}

// preview says what call c of run r will do, for a run of an uploaded
// spec; nil for any other, or a call that is no tool's.
func (e *Engine) preview(ctx context.Context, g *Graph, r *store.Run, c *store.Call) *ActionView {
	a, ok := g.agents[r.Agent]
	if !ok || g.upload == nil {
		return nil
	}
	decl := a.decl(c.Tool)
	if decl == nil {
		return nil // a delegation, or a tool no longer declared
	}
	v := &ActionView{Kind: decl.Kind(), Template: templateOf(decl)}
	for _, k := range a.kits {
		if k.spec == decl {
			v.Summary = k.kit.Describe().Action
		}
	}
	if decl.MCP != nil {
		// An MCP server's tool: its arguments say it all, and finding it
		// would start the server, which a read must not.
		return v
	}
	t, err := a.tool(ctx, c.Tool)
	if err != nil || t == nil {
		return v
	}
	pv, ok := t.tool.(toolkits.Previewer)
	if !ok {
		return v
	}
	var args map[string]any
	if err := json.Unmarshal(c.Args, &args); err != nil {
		v.Error = "arguments: " + err.Error()
		return v
	}
	call := toolkits.Call{RunID: r.ID, CallID: c.ID, Tool: c.Tool, Input: args, Run: runVars(r),
		Env: toolkits.PreviewEnv(t.tool.Secrets())}
	if c.Resume != nil {
		_ = json.Unmarshal(c.Resume, &call.Resume)
	}
	p, err := pv.Preview(call)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	v.Rendered = &p
	return v
}

// Line says in one line what the call will do: as rendered, else as
// written.
func (a *ActionView) Line() string {
	if a.Rendered != nil {
		return a.Rendered.Line()
	}
	return a.Template.Line()
}
