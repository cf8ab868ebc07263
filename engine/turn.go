package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
)

// answer is a model's turn as it will be committed: the assistant
// message, the calls it made (each through the gate) and the events that
// report them.
type answer struct {
	msg   message
	calls []*store.Call
	evs   []store.Event
	live  int // events the OnEvent hook has had already (text streamed live)
	text  string
}

// turn asks the model for its next turn and checkpoints the answer:
// final text completes the run; tool calls enter the ledger, each through
// the approval gate.
func (rn *runner) turn(ctx context.Context) error {
	resp, streamed, err := rn.ask(ctx)
	if err != nil || resp == nil {
		return err
	}
	ans, err := rn.admit(ctx, resp, streamed)
	if err != nil {
		return err
	}
	return rn.commit(ctx, ans)
}

// ask sends the conversation to the model with the agent's tools,
// streaming its text to the OnEvent hook. A model that cannot be asked
// (its provider down, its key missing, an MCP server's tools unlisted)
// stalls the run (resp nil, err nil); an interruption is returned as is,
// leaving the run as checkpointed.
func (rn *runner) ask(ctx context.Context) (resp *model.Response, streamed time.Time, err error) {
	if rn.st.Replay != "" && rn.e.replay == "" {
		// A worker, or a decision left to one: never a live model for a
		// run that replays a cassette.
		return nil, time.Time{}, rn.stall(ctx, fmt.Errorf("the run was started with --replay %s: continue it with --replay, never a live model", rn.st.Replay))
	}
	defs, err := rn.a.toolDefs(ctx)
	if err == nil {
		req := &model.Request{Messages: rn.st.conversation(rn.calls), Tools: defs, OnText: rn.e.streamTo(rn.r, &streamed)}
		resp, err = rn.generate(ctx, req)
	}
	var final *finalError
	switch {
	case err == nil:
		return resp, streamed, nil
	case ctx.Err() != nil:
		return nil, time.Time{}, ctx.Err() // interrupted: leave the run as checkpointed
	case errors.As(err, &final):
		return nil, time.Time{}, rn.fail(ctx, err)
	}
	return nil, time.Time{}, rn.stall(ctx, err)
}

// finalError is a model failure that asking again would repeat (see
// model.Final): it fails the run rather than stalling it.
type finalError struct{ msg string }

func (e *finalError) Error() string { return e.msg }

// stall stops the run because its model could not be asked: every result
// is kept, the lease released, and no worker takes the run by itself;
// agentctl continue asks the model again from this checkpoint.
func (rn *runner) stall(ctx context.Context, cause error) error {
	return rn.end(ctx, store.Stalled, cause.Error())
}

// generate is every model call of a run: the run's model (run --model
// overriding the agent's), with its temperature and maxTokens, its
// answer and errors with the secrets cut (askable), and its usage
// counted in the run.
func (rn *runner) generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	node := rn.a.model
	if n, ok := rn.g.models[rn.st.Model]; ok {
		node = n
	}
	m, err := rn.askable(node)
	if err != nil {
		return nil, err
	}
	req.Temperature, req.MaxTokens = node.spec.Temperature, node.spec.MaxTokens
	start := time.Now()
	cctx, span := rn.e.startChat(ctx, node.spec)
	done := rn.e.working("model " + node.spec.Name)
	resp, err := m.Generate(cctx, req)
	done()
	rn.latency = time.Since(start)
	rn.e.endChat(span, node.spec, resp, err)
	rn.e.observeModel(ctx, node.spec, rn.latency, resp, err)
	if err != nil {
		msg := fmt.Sprintf("model %s: %v", node.spec.Name, err) // cut (askable)
		if model.Final(err) {
			return nil, &finalError{msg: msg}
		}
		return nil, errors.New(msg)
	}
	addUsage(&rn.r.Usage, resp.Usage)
	return resp, nil
}

// observeModel tells the Observer of a model turn of model s that took d.
func (e *Engine) observeModel(ctx context.Context, s *spec.Model, d time.Duration, resp *model.Response, err error) {
	if e.observer == nil {
		return
	}
	outcome, in, out := "ok", 0, 0
	switch {
	case err != nil && ctx.Err() != nil:
		outcome = "interrupted"
	case err != nil:
		outcome = "error"
	case resp != nil:
		in, out = resp.Usage.InputTokens, resp.Usage.OutputTokens
	}
	e.observer.ModelCall(cmp.Or(s.Model, s.Name), s.Provider, outcome, d, in, out)
}

// admit turns the model's answer into the next step: each tool call gets
// an id unique in the run's tree and passes the gate.
func (rn *runner) admit(ctx context.Context, resp *model.Response, streamed time.Time) (*answer, error) {
	r := rn.r
	r.Step++
	ans := &answer{msg: message{Role: "assistant", Text: resp.Text}, text: resp.Text}
	if resp.Text != "" {
		ev := event(r, TextDelta{Text: resp.Text})
		if !streamed.IsZero() {
			ev.At, ans.live = streamed, 1 // stored as it was shown live
		}
		ans.evs = append(ans.evs, ev)
	}
	seq := len(rn.calls)
	for _, tc := range resp.ToolCalls {
		seq++
		part := toolCallPart{ID: rn.callID(tc.ID, seq, ans.calls), Tool: tc.Name, Args: tc.Args}
		if n := len(part.Args); n > rn.e.limits.MaxArgs {
			part.Args, part.dropped = "{}", n
		}
		ans.msg.ToolCalls = append(ans.msg.ToolCalls, part)
		c, err := rn.gate(ctx, part, seq)
		if err != nil {
			return nil, err
		}
		ans.calls = append(ans.calls, c)
		ans.evs = append(ans.evs, event(r, ToolCallEvent{CallID: c.ID, Tool: c.Tool, Args: c.Args}))
		ans.evs = append(ans.evs, ruleEvents(r, c)...)
		switch {
		case c.Status == store.CallPending:
			fields := ToolCallApproval{CallID: c.ID, Tool: c.Tool, Args: c.Args, Gate: c.Gate, GateError: c.GateError}
			if !c.Deadline.IsZero() {
				fields.Deadline = &c.Deadline
			}
			ans.evs = append(ans.evs, event(r, fields))
		case c.Status.Done():
			ans.evs = append(ans.evs, resultEvent(r, c))
		}
	}
	return ans, nil
}

// callID makes a call id unique in the run's whole tree: a child's calls
// carry the id of the delegation that made the child, and an id the model
// repeats (or leaves out) becomes call_SEQ.
func (rn *runner) callID(id string, seq int, more []*store.Call) string {
	prefix := ""
	if rn.r.ParentCall != "" {
		prefix = rn.r.ParentCall + "/"
	}
	taken := func(c *store.Call) bool { return c.ID == prefix+id }
	if id == "" || slices.ContainsFunc(rn.calls, taken) || slices.ContainsFunc(more, taken) {
		id = fmt.Sprintf("call_%d", seq)
	}
	return prefix + id
}

// commit checkpoints an answer: the message joins the conversation, its
// calls the ledger, and a final text completes the run, all in one
// transaction with the events that report them.
func (rn *runner) commit(ctx context.Context, ans *answer) error {
	r := rn.r
	finish := "tool-calls"
	if len(ans.calls) == 0 {
		finish = "stop"
	}
	ans.evs = append(ans.evs, event(r, StepFinish{Step: r.Step, FinishReason: finish, Latency: rn.latency.Round(time.Microsecond).Seconds()}))
	rn.st.Messages = append(rn.st.Messages, ans.msg)
	r.State = rn.st.encode()
	if len(ans.calls) == 0 {
		r.Status, r.Output = store.Completed, ans.text
		ans.evs = append(ans.evs, event(r, Finish{Output: r.Output}))
	}
	w := store.Writes{Run: r, Calls: ans.calls}
	if len(ans.calls) > 0 && len(rn.held.evs) == 0 {
		// Not durable yet: the call's move to executing, or the run's
		// suspension, commits it (see held).
		rn.hold(w, ans.live, ans.evs...)
	} else if err := rn.write(ctx, w, ans.live, ans.evs...); err != nil {
		return err
	}
	rn.calls = append(rn.calls, ans.calls...)
	return nil
}
