package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
)

// Message is a user's message to an existing run (agentctl send).
type Message struct {
	RunID  string // full run id
	Text   string
	By     string // on whose behalf; default OSUser
	OSUser string
	// Auth is what a server knows of the sender (agentctl serve); nil on
	// the CLI.
	Auth *Authority
	// Recorded, when set, is called once the message is committed,
	// before the run advances.
	Recorded func()
}

// Send appends a user message to a run's conversation and continues the
// run. A completed run takes new turns. A suspended run whose agent has
// autoResume, and that has a suspended call with a resumeSchema, gets
// resume data for that call extracted from the message by the model,
// validated against the schema; data that does not validate leaves the
// run suspended and says why. Approvals are never granted from text: a
// call waiting for approval still needs agentctl approve.
func (e *Engine) Send(ctx context.Context, m Message) (*RunView, error) {
	if err := e.checkBy(m.By); err != nil {
		return nil, err
	}
	r, t, err := e.touch(ctx, m.RunID)
	if err != nil {
		return nil, err
	}
	if r.ParentID != "" {
		return nil, usagef("run %s works for run %s: send messages to the root run, %s", r.ID, r.ParentID, r.RootID)
	}
	calls := t.calls
	if r.Status != store.Suspended && r.Status != store.Completed {
		return nil, conflictf("run %s is %s: messages go to suspended or completed runs", r.ID, r.Status)
	}
	g, err := e.graph(ctx, r.SpecHash)
	if err != nil {
		return nil, err
	}
	a, ok := g.agents[r.Agent]
	if !ok {
		return nil, fmt.Errorf("run %s: agent %q is not in the run's spec", r.ID, r.Agent)
	}
	if err := e.ready(g, r); err != nil {
		return nil, usagef("send to run %s: %v: nothing was recorded", r.ID, err)
	}
	if m.By == "" {
		m.By = m.OSUser
	}
	// A message that may resume a call is a resume: it passes the checks
	// agentctl resume does, --as included, before anything changes.
	if target := resumeTarget(a, r, calls); target != nil && r.Status == store.Suspended {
		d := Decision{Action: store.Resume, By: m.By, OSUser: m.OSUser, Auth: m.Auth}
		if why := e.check(g, r, r.StartedBy, target, d); why != "" {
			return nil, e.refuse(ctx, r, []*store.Call{target}, d, why)
		}
	}
	// Any other message on behalf of another is a delegate's too.
	if why := e.onBehalf(g, m.By, m.OSUser, m.Auth); why != "" {
		return nil, fmt.Errorf("send to run %s: %s: %w", r.ID, why, store.ErrForbidden)
	}
	if err := e.store.Claim(ctx, e.lease, r.ID, store.Suspended, store.Completed); err != nil {
		return nil, err
	}
	st, err := decodeState(r)
	if err != nil {
		return nil, err
	}
	wasSuspended := r.Status == store.Suspended
	st.Messages = append(st.Messages, message{Role: "user", Text: m.Text})
	st.TurnStart = r.Step
	r.Status, r.Output, r.State = store.Running, "", st.encode()
	if err := e.store.Checkpoint(ctx, e.lease, r, nil); err != nil {
		return nil, err
	}
	if m.Recorded != nil {
		m.Recorded()
	}
	var notice string
	if wasSuspended {
		rn := &runner{e: e, g: g, a: a, r: r, st: st, calls: calls}
		if notice, err = rn.autoResume(ctx, m); err != nil {
			return nil, err
		}
	}
	v, err := e.advance(ctx, g, r)
	if v != nil {
		v.Notice = notice
	}
	return v, err
}

// autoResume asks the model for the resume data of the run's first
// suspended call that declares a resumeSchema, and resumes the call with
// it when it validates. It returns a notice for the user when nothing was
// resumed.
func (rn *runner) autoResume(ctx context.Context, m Message) (string, error) {
	e, a, r := rn.e, rn.a, rn.r
	var waiting []string
	for _, c := range rn.calls {
		if c.Status == store.CallPending && c.Kind != store.KindDelegation {
			waiting = append(waiting, fmt.Sprintf("%s (%s, %s)", c.ID, c.Tool, c.Kind))
		}
	}
	target := resumeTarget(a, r, rn.calls)
	switch {
	case !a.spec.AutoResume:
		return "the message was added; agent " + a.spec.Name + " has no autoResume, so the run still waits for: " + strings.Join(waiting, ", "), nil
	case target == nil:
		return "the message was added; no suspended call of this run declares a resumeSchema, so the run still waits for: " + strings.Join(waiting, ", "), nil
	}
	t := a.decl(target.Tool)
	data, err := rn.extract(ctx, target, t)
	if err != nil {
		return fmt.Sprintf("could not resume call %s from the message: %v; the run still waits for: %s",
			target.ID, err, strings.Join(waiting, ", ")), nil
	}
	d := &store.Decision{RunID: r.ID, CallID: target.ID, Action: store.Resume, By: m.By, OSUser: m.OSUser, Via: m.Auth.via(),
		Reason: "autoResume: extracted from the user's message", ArgsBefore: target.Args, Data: data}
	evs := []store.Event{decisionEvent(r, target, d)} // stamped with At as stored
	if _, err := e.store.Decide(ctx, []*store.Decision{d}, e.lease, evs...); err != nil {
		return "", err
	}
	e.emit(evs)
	return "", nil
}

// resumeTarget is the call a message to run r may resume: with
// autoResume, its first suspended call that declares a resumeSchema.
func resumeTarget(a *agentNode, r *store.Run, calls []*store.Call) *store.Call {
	if !a.spec.AutoResume {
		return nil
	}
	for _, c := range calls {
		if c.Status == store.CallPending && c.RunID == r.ID && c.Kind == store.KindSuspend && len(c.ResumeSchema) > 0 {
			return c
		}
	}
	return nil
}

// extract runs one model turn whose only tool is spec.ResumeTool, with
// the suspended call's resumeSchema as its parameters, and returns the
// arguments it was called with once they validate. The exchange joins
// the conversation, so the model knows what happened.
func (rn *runner) extract(ctx context.Context, target *store.Call, t *spec.Tool) (json.RawMessage, error) {
	e, r, st := rn.e, rn.r, rn.st
	var params map[string]any
	if err := json.Unmarshal(target.ResumeSchema, &params); err != nil {
		return nil, err
	}
	tool := model.ToolDef{
		Name: spec.ResumeTool,
		Description: fmt.Sprintf("Give the data that tool call %s (%s) waits for, taken from the user's last message. It showed: %s",
			target.ID, target.Tool, target.Payload),
		Parameters: params,
	}
	resp, err := rn.generate(ctx, &model.Request{Messages: st.conversation(rn.calls), Tools: []model.ToolDef{tool}, Force: spec.ResumeTool})
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(resp.ToolCalls, func(tc model.ToolCall) bool { return tc.Name == spec.ResumeTool })
	if i < 0 {
		return nil, fmt.Errorf("the model did not call %s", spec.ResumeTool)
	}
	tc := resp.ToolCalls[i]
	id := tc.ID
	if id == "" {
		id = fmt.Sprintf("resume_%s_%d", target.ID, len(st.Messages))
	}
	var data map[string]any
	err = json.Unmarshal([]byte(tc.Args), &data)
	if err == nil {
		err = describeSchemaError(t.ResumeSchema.Validate(data))
	}
	outcome := "Resume data accepted for call " + target.ID + "."
	if err != nil {
		outcome = "Resume data refused: " + err.Error()
	}
	st.Messages = append(st.Messages,
		message{Role: "assistant", Text: resp.Text, ToolCalls: []toolCallPart{{ID: id, Tool: spec.ResumeTool, Args: tc.Args}}},
		message{Role: "tool", CallID: id, Tool: spec.ResumeTool, Text: outcome})
	r.State = st.encode()
	if cerr := e.store.Checkpoint(ctx, e.lease, r, nil); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(data)
}
