package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec/tmpl"
)

// gate enters a model's tool call in the ledger and decides, once,
// whether it waits for a human. Arguments are untrusted: a call to an
// unknown tool or with arguments that break the tool's schema fails at
// once, and the model is told why. The verdict and its reason are kept
// with the call.
func (e *Engine) gate(ctx context.Context, a *agentNode, st *state, r *store.Run, grants func() []string, id string, seq int, fc *llms.FunctionCall) *store.Call {
	c := &store.Call{ID: id, Seq: seq, Step: r.Step, Tool: fc.Name, Status: store.CallApproved}
	args, err := decodeArgs(fc.Arguments)
	if err == nil {
		c.Args, _ = json.Marshal(args)
	} else {
		c.Args, _ = json.Marshal(fc.Arguments) // kept as the string the model sent
	}
	if _, ok := a.subs[fc.Name]; ok {
		// A delegation: the sub-agent's own calls pass their gates.
		task, _ := args["task"].(string)
		switch {
		case err != nil:
			c.Status, c.Result = store.CallFailed, "error: invalid arguments: "+err.Error()
		case strings.TrimSpace(task) == "":
			c.Status, c.Result = store.CallFailed, `error: invalid arguments: a delegation needs {"task": "..."}`
		default:
			c.Gate = "delegation to sub-agent " + fc.Name
		}
		return c
	}
	if s, name, ok := a.mcpTool(fc.Name); ok && err == nil {
		e.gateMCP(ctx, a, st, c, args, s, name)
		if c.Status == store.CallPending && slices.Contains(grants(), c.Tool) {
			c.Status, c.Kind = store.CallApproved, ""
			c.Gate = "approved for the rest of the run (approve --always); would need: " + strings.TrimPrefix(c.Gate, "required by ")
		}
		if c.Status == store.CallPending {
			c.Deadline = e.deadline(a, nil)
		}
		return c
	}
	t, ok := a.tools[fc.Name]
	switch {
	case !ok || t.mcp != nil:
		c.Status, c.Result = store.CallFailed, fmt.Sprintf("error: unknown tool %q; available tools: %s", fc.Name, strings.Join(toolNames(a), ", "))
		return c
	case err != nil:
		c.Status, c.Result = store.CallFailed, "error: invalid arguments: "+err.Error()
		return c
	}
	if err := describeSchemaError(t.spec.ValidateInput(args)); err != nil {
		c.Status, c.Result = store.CallFailed, "error: invalid arguments: "+err.Error()
		return c
	}
	var why []string
	need, err := t.spec.RequireApproval.Eval(tmpl.Env{"input": args, "run": runVars(r)})
	switch {
	case err != nil:
		// Fail closed: a condition that cannot be evaluated asks a human.
		c.GateError = err.Error()
		why = append(why, "requireApproval failed to evaluate")
	case need:
		if _, isConst := t.spec.RequireApproval.IsConst(); isConst {
			why = append(why, "tool requireApproval")
		} else {
			why = append(why, "requireApproval "+t.spec.RequireApproval.Source())
		}
	}
	if a.spec.RequireToolApproval {
		why = append(why, "agent requireToolApproval")
	}
	if st.RequireApproval {
		why = append(why, "run --require-approval")
	}
	switch {
	case len(why) == 0:
		if _, isConst := t.spec.RequireApproval.IsConst(); !isConst {
			c.Gate = "not required: requireApproval " + t.spec.RequireApproval.Source() + " is false"
		}
	case slices.Contains(grants(), c.Tool):
		c.Gate = "approved for the rest of the run (approve --always); would need: " + strings.Join(why, ", ")
	default:
		c.Status, c.Kind = store.CallPending, store.KindApproval
		c.Gate = "required by " + strings.Join(why, ", ")
		c.Deadline = e.deadline(a, t)
		if t.spec.Approvals > 1 {
			c.Needed = t.spec.Approvals
		}
	}
	return c
}

// deadline is when a call that starts waiting now expires: the tool's
// approvalTimeout, else the agent's; zero for none.
func (e *Engine) deadline(a *agentNode, t *toolNode) time.Time {
	var d time.Duration
	if t != nil {
		d = t.spec.ApprovalTimeout
	}
	if d == 0 {
		d = a.spec.ApprovalTimeout
	}
	if d == 0 {
		return time.Time{}
	}
	return e.now().Add(d).UTC().Truncate(time.Millisecond)
}

// runVars is what placeholders see as run.
func runVars(r *store.Run) map[string]any {
	return map[string]any{"id": r.ID, "agent": r.Agent, "step": r.Step}
}

// toolNames lists what the agent's model may call: tools and sub-agents.
func toolNames(a *agentNode) []string {
	names := make([]string, len(a.defs))
	for i, d := range a.defs {
		names[i] = d.Function.Name
	}
	return names
}

// decodeArgs parses a model's argument JSON; empty means no arguments.
func decodeArgs(s string) (map[string]any, error) {
	if strings.TrimSpace(s) == "" {
		return map[string]any{}, nil
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(s), &args); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if args == nil {
		args = map[string]any{}
	}
	return args, nil
}
