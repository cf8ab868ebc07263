package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec/tmpl"
	"github.com/agentctl/agentctl/toolkits"
)

// execute carries out one approved call: the tool may suspend itself
// (suspend.when), be skipped (skip.when), or run its action. The call is
// marked executing, durably, before its side effect starts, so it is
// never started twice.
func (e *Engine) execute(ctx context.Context, g *Graph, a *agentNode, r *store.Run, st *state, c *store.Call) error {
	if sub, ok := a.subs[c.Tool]; ok {
		return e.delegate(ctx, g, a, sub, r, st, c)
	}
	if s, name, ok := a.mcpTool(c.Tool); ok {
		call := toolkits.Call{RunID: r.ID, CallID: c.ID, Tool: c.Tool, Run: runVars(r)}
		if err := json.Unmarshal(c.Args, &call.Input); err != nil {
			return e.settle(ctx, r, c, store.CallApproved, store.CallFailed, "error: invalid arguments: "+err.Error())
		}
		return e.executeMCP(ctx, r, c, s, name, call)
	}
	t, ok := a.tools[c.Tool]
	if !ok { // the gate lets none through; a changed spec could
		return e.settle(ctx, r, c, store.CallApproved, store.CallFailed, fmt.Sprintf("error: agent %s has no tool %q", a.spec.Name, c.Tool))
	}
	call := toolkits.Call{RunID: r.ID, CallID: c.ID, Tool: c.Tool, Run: runVars(r)}
	if err := json.Unmarshal(c.Args, &call.Input); err != nil {
		return e.settle(ctx, r, c, store.CallApproved, store.CallFailed, "error: invalid arguments: "+err.Error())
	}
	if len(c.Resume) > 0 {
		if err := json.Unmarshal(c.Resume, &call.Resume); err != nil {
			return e.settle(ctx, r, c, store.CallApproved, store.CallFailed, "error: invalid resume data: "+err.Error())
		}
	}
	env := tmpl.Env(call.Vars())
	if sp := t.spec.Suspend; sp != nil {
		when, err := sp.When.Eval(env)
		if err != nil {
			return e.settle(ctx, r, c, store.CallApproved, store.CallFailed, fmt.Sprintf("error: suspend.when (%s): %v", sp.Pos, err))
		}
		if when {
			return e.suspendCall(ctx, a, t, r, c, env)
		}
	}
	if sk := t.spec.Skip; sk != nil {
		when, err := sk.When.Eval(env)
		if err != nil {
			return e.settle(ctx, r, c, store.CallApproved, store.CallFailed, "error: skip.when: "+err.Error())
		}
		if when {
			out, err := sk.Output.Render(env)
			if err != nil {
				return e.settle(ctx, r, c, store.CallApproved, store.CallFailed, "error: skip.output: "+err.Error())
			}
			return e.settle(ctx, r, c, store.CallApproved, store.CallSucceeded, out)
		}
	}
	if err := e.store.MoveCall(ctx, e.lease, store.Move{RunID: r.ID, CallID: c.ID, From: store.CallApproved, To: store.CallExecuting}); err != nil {
		return err
	}
	c.Status = store.CallExecuting
	status, content := store.CallSucceeded, ""
	call.Env = toolkits.Environ()
	res, err := t.action.Do(ctx, call)
	switch {
	case err != nil:
		status, content = store.CallFailed, "error: "+err.Error()
	case res.Failed:
		status, content = store.CallFailed, res.Content
	default:
		content = res.Content
	}
	content = redact(content, t.secrets, call.Env)
	// The outcome is recorded even if we were interrupted meanwhile.
	return e.settle(context.WithoutCancel(ctx), r, c, store.CallExecuting, status, content)
}

// settle records a call's outcome and reports it as an event.
func (e *Engine) settle(ctx context.Context, r *store.Run, c *store.Call, from, to store.CallStatus, result string) error {
	done := *c
	done.Status, done.Result = to, result
	ev := resultEvent(r.ID, &done)
	if err := e.store.MoveCall(ctx, e.lease, store.Move{RunID: r.ID, CallID: c.ID, From: from, To: to, Result: result}, ev); err != nil {
		return err
	}
	*c = done
	e.emit([]store.Event{ev})
	return nil
}

// suspendCall pauses a call with its rendered payload until resume data
// (or a decline) arrives. A payload that breaks suspend.schema is a fault
// of the spec: the call fails, naming the place.
func (e *Engine) suspendCall(ctx context.Context, a *agentNode, t *toolNode, r *store.Run, c *store.Call, env tmpl.Env) error {
	sp := t.spec.Suspend
	payload, err := sp.Payload.Eval(env)
	if err != nil {
		return e.settle(ctx, r, c, store.CallApproved, store.CallFailed, fmt.Sprintf("error: suspend.payload (%s): %v", sp.Pos, err))
	}
	if err := describeSchemaError(sp.Schema.Validate(payload)); err != nil {
		return e.settle(ctx, r, c, store.CallApproved, store.CallFailed,
			fmt.Sprintf("error: suspend.payload (%s) does not satisfy suspend.schema: %v", sp.Pos, err))
	}
	p, err := json.Marshal(payload)
	if err != nil {
		return e.settle(ctx, r, c, store.CallApproved, store.CallFailed, "error: suspend.payload: "+err.Error())
	}
	m := store.Move{RunID: r.ID, CallID: c.ID, From: store.CallApproved, To: store.CallPending,
		Kind: store.KindSuspend, Payload: p, Deadline: e.deadline(a, t)}
	fields := map[string]any{"callId": c.ID, "tool": c.Tool, "args": c.Args, "payload": json.RawMessage(p)}
	if t.spec.ResumeSchema != nil {
		fields["resumeSchema"] = t.spec.ResumeSchema.Doc
		m.ResumeSchema, _ = json.Marshal(t.spec.ResumeSchema.Doc)
	}
	ev := event(r.ID, EventToolCallSuspended, fields)
	if err := e.store.MoveCall(ctx, e.lease, m, ev); err != nil {
		return err
	}
	c.Status, c.Kind, c.Payload, c.ResumeSchema, c.Deadline = store.CallPending, store.KindSuspend, p, m.ResumeSchema, m.Deadline
	e.emit([]store.Event{ev})
	return nil
}

// redact cuts the values of the named environment variables out of a
// tool's result, so that a secret the tool echoes is never stored.
func redact(s string, names []string, env map[string]string) string {
	for _, n := range names {
		if v := env[n]; len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[env."+n+"]")
		}
	}
	return s
}
