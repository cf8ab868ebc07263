package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/spec/tmpl"
	"github.com/agentctl/agentctl/toolkits"
)

// execute carries out one approved call: a delegation runs its sub-agent;
// a tool may suspend itself (suspend.when), be skipped (skip.when), or run.
// Every tool, whatever its toolkit, passes here.
func (rn *runner) execute(ctx context.Context, c *store.Call) (err error) {
	ctx, span := rn.e.startTool(ctx, c, rn.a)
	defer func() { rn.e.endTool(span, c, err) }()
	if sub, ok := rn.a.subs[c.Tool]; ok {
		return rn.delegate(ctx, sub, c)
	}
	if ok, err := rn.approvedOnRecord(ctx, c); err != nil || !ok {
		if err != nil {
			return err
		}
		return rn.settle(ctx, c, store.CallFailed, fmt.Sprintf(
			"error: call %s needs approval and has no approval on record; it was not executed (was the database changed outside agentctl? agentctl doctor)", c.ID))
	}
	t, err := rn.a.tool(ctx, c.Tool)
	switch {
	case err != nil:
		return rn.settle(ctx, c, store.CallFailed, "error: "+err.Error())
	case t == nil: // the gate lets none through; a changed spec could
		return rn.settle(ctx, c, store.CallFailed, fmt.Sprintf("error: agent %s has no tool %q", rn.a.spec.Name, c.Tool))
	}
	if held, err := rn.recheck(ctx, t, c); held || err != nil {
		return err
	}
	rn.e.traceArgs(ctx, c, t.tool.Secrets())
	call := toolkits.Call{RunID: rn.r.ID, CallID: c.ID, Tool: c.Tool, Run: runVars(rn.r)}
	if err := json.Unmarshal(c.Args, &call.Input); err != nil {
		return rn.settle(ctx, c, store.CallFailed, "error: invalid arguments: "+err.Error())
	}
	if len(c.Resume) > 0 {
		if err := json.Unmarshal(c.Resume, &call.Resume); err != nil {
			return rn.settle(ctx, c, store.CallFailed, "error: invalid resume data: "+err.Error())
		}
	}
	// suspend and skip never see env: what they render is stored.
	if done, err := rn.before(ctx, t.decl, c, tmpl.Env(call.Vars())); done || err != nil {
		return err
	}
	return rn.run(ctx, t, c, call)
}

// approvedOnRecord reports whether a call its gate held for approval has
// an approval on record: a status changed outside agentctl is not one.
// The count kept on the call answers at once; the audit trail only for a
// call approved before agentctl counted approvals.
func (rn *runner) approvedOnRecord(ctx context.Context, c *store.Call) (bool, error) {
	if c.Gate.Verdict != store.GateRequired || c.Approvals > 0 {
		return true, nil
	}
	ds, err := rn.e.store.Decisions(ctx, c.RunID)
	if err != nil {
		return false, err
	}
	for _, d := range ds {
		if d.CallID == c.ID && (d.Action == store.Approve || d.Action == store.Resume) {
			return true, nil
		}
	}
	return false, nil
}

// before applies a declaration's suspend and skip conditions to a call
// about to run; done reports that the call was suspended or settled.
func (rn *runner) before(ctx context.Context, t *spec.Tool, c *store.Call, env tmpl.Env) (done bool, err error) {
	if sp := t.Suspend; sp != nil {
		when, err := sp.When.Eval(env)
		if err != nil {
			return true, rn.settle(ctx, c, store.CallFailed, fmt.Sprintf("error: suspend.when (%s): %v", sp.Pos, err))
		}
		if when {
			return true, rn.suspendCall(ctx, t, c, env)
		}
	}
	if sk := t.Skip; sk != nil {
		when, err := sk.When.Eval(env)
		if err != nil {
			return true, rn.settle(ctx, c, store.CallFailed, "error: skip.when: "+err.Error())
		}
		if when {
			out, err := sk.Output.Render(env)
			if err != nil {
				return true, rn.settle(ctx, c, store.CallFailed, "error: skip.output: "+err.Error())
			}
			return true, rn.settle(ctx, c, store.CallSucceeded, out)
		}
	}
	return false, nil
}

// run carries out a call: it is marked executing, durably, before its
// side effect starts, so it is never started twice; the values of the
// tool's secrets are cut out of its result before it is stored.
func (rn *runner) run(ctx context.Context, tn *toolNode, c *store.Call, call toolkits.Call) error {
	e, t := rn.e, tn.tool
	if c.Status != store.CallExecuting { // else its decision started it
		if err := rn.write(ctx, store.Writes{Moves: []store.Move{{RunID: rn.r.ID, CallID: c.ID, From: store.CallApproved, To: store.CallExecuting}}}, 0); err != nil {
			return err
		}
		c.Status = store.CallExecuting
	}
	call.Env = toolkits.EnvOf(t.Secrets())
	start := time.Now()
	done := e.working("tool " + c.Tool)
	res, err := t.Do(ctx, call)
	done()
	m := store.Move{From: store.CallExecuting, To: store.CallSucceeded, Result: res.Content, ResultObject: res.Object}
	if e.observer != nil {
		outcome := store.CallSucceeded
		switch {
		case err != nil && ctx.Err() != nil:
			outcome = store.CallInterrupted
		case err != nil || res.Failed:
			outcome = store.CallFailed
		}
		e.observer.ToolCall(c.Tool, tn.decl.Kind(), string(outcome), time.Since(start))
	}
	switch {
	case err != nil && ctx.Err() != nil:
		// Stopped past the grace period: the tool was killed mid-way.
		wctx := context.WithoutCancel(ctx)
		if err := rn.interrupt(wctx, c, "interrupted: agentctl was stopped before the tool finished; it may or may not have taken effect"); err != nil {
			return err
		}
		if err := rn.restInterrupted(wctx, c); err != nil {
			return err
		}
		return ctx.Err()
	case err != nil:
		m.To, m.Result, m.ResultObject = store.CallFailed, "error: "+err.Error(), false
	case res.Failed:
		m.To = store.CallFailed
	}
	m.Result = cut(redact(m.Result, t.Secrets(), call.Env), e.limits.MaxResult)
	// An object stays one only whole: a result cut to the limit is text.
	m.ResultObject = m.ResultObject && json.Valid([]byte(m.Result))
	// The outcome is recorded even if we were interrupted meanwhile.
	return rn.settleMove(context.WithoutCancel(ctx), c, m)
}

// settle records a call's outcome, a text result, and reports it as an
// event.
func (rn *runner) settle(ctx context.Context, c *store.Call, to store.CallStatus, result string) error {
	return rn.settleMove(ctx, c, store.Move{From: c.Status, To: to, Result: result})
}

// settleMove records a call's move from m.From to its outcome m.To with
// m.Result (a JSON object when m.ResultObject), and reports it as an
// event.
func (rn *runner) settleMove(ctx context.Context, c *store.Call, m store.Move) error {
	m.RunID, m.CallID = rn.r.ID, c.ID
	done := *c
	done.Status, done.Result, done.ResultObject = m.To, m.Result, m.ResultObject
	if err := rn.write(ctx, store.Writes{Moves: []store.Move{m}}, 0, resultEvent(rn.r, &done)); err != nil {
		return err
	}
	*c = done
	return nil
}

// suspendCall pauses a call with its rendered payload until resume data
// (or a decline) arrives. A payload that breaks suspend.schema is a fault
// of the spec: the call fails, naming the place.
func (rn *runner) suspendCall(ctx context.Context, t *spec.Tool, c *store.Call, env tmpl.Env) error {
	sp := t.Suspend
	fail := func(msg string) error { return rn.settle(ctx, c, store.CallFailed, msg) }
	payload, err := sp.Payload.Eval(env)
	if err != nil {
		return fail(fmt.Sprintf("error: suspend.payload (%s): %v", sp.Pos, err))
	}
	if err := describeSchemaError(sp.Schema.Validate(payload)); err != nil {
		return fail(fmt.Sprintf("error: suspend.payload (%s) does not satisfy suspend.schema: %v", sp.Pos, err))
	}
	p, err := json.Marshal(payload)
	if err != nil {
		return fail("error: suspend.payload: " + err.Error())
	}
	m := store.Move{RunID: rn.r.ID, CallID: c.ID, From: c.Status, To: store.CallPending,
		Kind: store.KindSuspend, Payload: p, Deadline: rn.e.deadline(rn.a, t)}
	fields := ToolCallSuspended{CallID: c.ID, Tool: c.Tool, Args: c.Args, Payload: p}
	if t.ResumeSchema != nil {
		fields.ResumeSchema = t.ResumeSchema.Doc
		m.ResumeSchema, _ = json.Marshal(t.ResumeSchema.Doc)
	}
	if err := rn.write(ctx, store.Writes{Moves: []store.Move{m}}, 0, event(rn.r, fields)); err != nil {
		return err
	}
	c.Status, c.Kind, c.Payload, c.ResumeSchema, c.Deadline = store.CallPending, store.KindSuspend, p, m.ResumeSchema, m.Deadline
	return nil
}

// cut keeps the first max bytes of a result (whole UTF-8 characters) and
// says how many were cut off.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	keep := max
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return fmt.Sprintf("%s\n[... %d bytes cut: over the limit of %d bytes (AGENTCTL_MAX_RESULT)]", s[:keep], len(s)-keep, max)
}
