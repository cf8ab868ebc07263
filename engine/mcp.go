package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec/tmpl"
	"github.com/agentctl/agentctl/toolkits"
	toolmcp "github.com/agentctl/agentctl/toolkits/mcp"
)

// MCP tools are SERVER.TOOL in agentctl and SERVER__TOOL to models, whose
// function names may not hold dots.
const mcpSep = "__"

// mcpTool finds the server and tool a name (SERVER.TOOL or SERVER__TOOL)
// designates in an agent.
func (a *agentNode) mcpTool(name string) (*toolmcp.Server, string, bool) {
	for _, s := range a.mcps {
		for _, sep := range []string{".", mcpSep} {
			if tool, ok := strings.CutPrefix(name, s.Name+sep); ok && tool != "" {
				return s, tool, true
			}
		}
	}
	return nil, "", false
}

// toolDefs is what the agent's model is offered: its declared tools and
// sub-agents, then the tools of its MCP servers (started on first need).
func (e *Engine) toolDefs(ctx context.Context, a *agentNode) ([]llms.Tool, error) {
	if len(a.mcps) == 0 {
		return a.defs, nil
	}
	defs := append([]llms.Tool(nil), a.defs...)
	for _, s := range a.mcps {
		tools, err := s.Tools(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range tools {
			defs = append(defs, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
				Name: s.Name + mcpSep + t.Name, Description: t.Description, Parameters: t.Input.Doc,
			}})
		}
	}
	return defs, nil
}

// gateMCP is the approval gate of a call to an MCP server's tool: the
// server's declared condition (per tool, else for all of its tools),
// with read-only tools free when the spec says so, failing closed.
func (e *Engine) gateMCP(ctx context.Context, a *agentNode, st *state, c *store.Call, args map[string]any, s *toolmcp.Server, name string) {
	c.Tool = s.Name + "." + name
	t, err := s.Tool(ctx, name)
	if err != nil {
		c.Status, c.Result = store.CallFailed, "error: "+err.Error()
		return
	}
	if err := describeSchemaError(t.Input.Validate(args)); err != nil {
		c.Status, c.Result = store.CallFailed, "error: invalid arguments: "+err.Error()
		return
	}
	m := s.Spec()
	cond, perTool := m.Tools[name]
	if !perTool {
		cond = m.RequireApproval
	}
	var why []string
	need, err := cond.Eval(tmpl.Env{"tool": name, "input": args})
	switch {
	case err != nil:
		c.GateError = err.Error()
		why = append(why, "requireApproval failed to evaluate")
	case need && t.ReadOnly && m.AutoApproveReadOnly && !perTool:
		c.Gate = "not required: the server marks " + name + " read-only (autoApproveReadOnly)"
	case need:
		why = append(why, "mcp requireApproval "+cond.Source())
	}
	if a.spec.RequireToolApproval {
		why = append(why, "agent requireToolApproval")
	}
	if st.RequireApproval {
		why = append(why, "run --require-approval")
	}
	if len(why) > 0 {
		c.Status, c.Kind = store.CallPending, store.KindApproval
		c.Gate = "required by " + strings.Join(why, ", ")
	}
}

// executeMCP runs an approved call of an MCP server's tool.
func (e *Engine) executeMCP(ctx context.Context, r *store.Run, c *store.Call, s *toolmcp.Server, name string, call toolkits.Call) error {
	if err := e.store.MoveCall(ctx, e.lease, store.Move{RunID: r.ID, CallID: c.ID, From: store.CallApproved, To: store.CallExecuting}); err != nil {
		return err
	}
	c.Status = store.CallExecuting
	status, content := store.CallSucceeded, ""
	res, err := s.Call(ctx, name, call)
	switch {
	case err != nil:
		status, content = store.CallFailed, fmt.Sprintf("error: %v", err)
	case res.Failed:
		status, content = store.CallFailed, res.Content
	default:
		content = res.Content
	}
	return e.settle(context.WithoutCancel(ctx), r, c, store.CallExecuting, status, content)
}
