package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentctl/agentctl/engine/store"
)

// StartOptions describe a new run.
type StartOptions struct {
	Agent string
	Input string
	// RequireApproval makes every tool call of the run wait for a human.
	RequireApproval bool
	// Model, when set, replaces the agent's model for this run.
	Model string
	// Detach queues the run for a worker (agentctl worker) instead of
	// advancing it here.
	Detach bool
	// StartedBy is the OS user starting the run (separateDuties).
	StartedBy string
}

// Start creates a run of an agent and advances it until it completes,
// fails or waits for a human. The run is durable from the first write.
func (e *Engine) Start(ctx context.Context, g *Graph, opts StartOptions) (*RunView, error) {
	a, ok := g.agents[opts.Agent]
	if !ok {
		known := strings.Join(g.Agents(), ", ")
		if known == "" {
			known = "none"
		}
		return nil, usagef("unknown agent %q (agents: %s)", opts.Agent, known)
	}
	if opts.Model != "" {
		if _, ok := g.models[opts.Model]; !ok {
			return nil, usagef("unknown model %q for --model (models: %s)", opts.Model, strings.Join(g.modelNames(), ", "))
		}
	}
	if err := g.checkModels(a, opts.Model); err != nil {
		return nil, err
	}
	st := &state{RequireApproval: opts.RequireApproval, MaxDepth: a.spec.MaxDepth, Model: opts.Model}
	if a.spec.Instructions != "" {
		st.Messages = append(st.Messages, message{Role: "system", Text: a.spec.Instructions})
	}
	st.Messages = append(st.Messages, message{Role: "user", Text: opts.Input})
	r := &store.Run{
		ID:        e.newRunID(),
		Agent:     opts.Agent,
		Status:    store.Running,
		Input:     opts.Input,
		SpecHash:  g.hash,
		State:     st.encode(),
		StartedBy: opts.StartedBy,
	}
	if opts.Detach {
		r.Status = store.Queued
		if err := e.store.CreateRun(ctx, r, g.snapshot, store.Lease{}); err != nil {
			return nil, err
		}
		return view(r, nil, nil), nil
	}
	if err := e.store.CreateRun(ctx, r, g.snapshot, e.lease); err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.graphs[g.hash] = g
	e.mu.Unlock()
	return e.advance(ctx, g, r)
}

// advance drives a run this process holds until it completes, fails or
// waits for a human, checkpointing after every step, and returns the run
// as it left it. Interrupted (ctx done), it releases the run, which stays
// as last checkpointed for agentctl continue.
func (e *Engine) advance(ctx context.Context, g *Graph, r *store.Run) (*RunView, error) {
	v, err := e.step(ctx, g, r)
	if err != nil && ctx.Err() != nil {
		_ = e.store.Release(context.WithoutCancel(ctx), e.lease, r.ID)
		return nil, &InterruptedError{RunID: r.RootID}
	}
	return v, err
}

// InterruptedError reports a run left as checkpointed because the
// process was interrupted.
type InterruptedError struct{ RunID string }

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("interrupted: run %s is checkpointed; continue it with agentctl continue %s", e.RunID, e.RunID)
}

// step is advance without the handling of interruption.
func (e *Engine) step(ctx context.Context, g *Graph, r *store.Run) (*RunView, error) {
	stop := e.heartbeat(ctx, r.ID)
	defer stop()
	a, ok := g.agents[r.Agent]
	if !ok {
		return e.fail(ctx, r, fmt.Errorf("agent %q is not in the run's spec", r.Agent))
	}
	st, err := decodeState(r)
	if err != nil {
		return nil, err
	}
	calls, err := e.store.Calls(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// The ledger in memory is this process's own writes; other
		// processes only decide pending calls, which Suspend detects.
		turn := slices.DeleteFunc(slices.Clone(calls), func(c *store.Call) bool { return c.Step != r.Step })
		if c := find(turn, store.CallApproved); c != nil {
			if err := e.execute(ctx, g, a, r, st, c); err != nil {
				return nil, err
			}
			continue
		}
		if c := find(turn, store.CallExecuting); c != nil {
			// Left executing by a process that died: its side effect may
			// have happened. Only an idempotent tool runs again by itself.
			if err := e.recover(ctx, a, r, c); err != nil {
				return nil, err
			}
			continue
		}
		if find(turn, store.CallPending) != nil || find(turn, store.CallInterrupted) != nil {
			err := e.store.Suspend(ctx, e.lease, r)
			if errors.Is(err, store.ErrNotIdle) {
				// A decision arrived while we worked: act on it.
				if calls, err = e.store.Calls(ctx, r.ID); err != nil {
					return nil, err
				}
				continue
			}
			if err != nil {
				return nil, err
			}
			if slices.ContainsFunc(calls, func(c *store.Call) bool { return c.Kind == store.KindDelegation && c.Status == store.CallPending }) {
				return e.Inspect(ctx, r.ID) // what waits is in the subtree
			}
			return view(r, pending(calls), nil), nil
		}
		if r.Step-st.TurnStart >= a.spec.MaxSteps {
			return e.fail(ctx, r, fmt.Errorf("%w: agent %s allows %d model turns", ErrMaxSteps, a.spec.Name, a.spec.MaxSteps))
		}
		newCalls, err := e.modelTurn(ctx, g, a, r, st, calls)
		if err != nil {
			return nil, err
		}
		if r.Status.Terminal() {
			return view(r, nil, nil), nil
		}
		calls = append(calls, newCalls...)
	}
}

// recover deals with a call found executing while this process holds the
// run, that is, left so by a process that died.
func (e *Engine) recover(ctx context.Context, a *agentNode, r *store.Run, c *store.Call) error {
	m := store.Move{RunID: r.ID, CallID: c.ID, From: store.CallExecuting, To: store.CallInterrupted, Kind: store.KindInterrupted,
		Result: "interrupted: the process running this call stopped; it may or may not have taken effect"}
	if t, ok := a.tools[c.Tool]; ok && t.spec.Idempotent {
		m.To, m.Kind, m.Result = store.CallApproved, "", ""
	}
	if err := e.store.MoveCall(ctx, e.lease, m); err != nil {
		return err
	}
	c.Status, c.Kind, c.Result = m.To, m.Kind, m.Result
	return nil
}

// Continue advances a run that is ready to go on with no human: one left
// running by a process that stopped (Ctrl-C, a crash), from its last
// checkpoint; one whose calls were decided with --detach; one with a call
// past its deadline, which it first declines. A run whose process died on
// this machine is taken over at once; otherwise once its lease has run
// out.
func (e *Engine) Continue(ctx context.Context, runID string) (*RunView, error) {
	before, err := e.store.Run(ctx, runID)
	if err != nil {
		return nil, err
	}
	r, t, err := e.touch(ctx, runID)
	if err != nil {
		return nil, err
	}
	if r.Status != before.Status || r.Step != before.Step {
		return e.Inspect(ctx, r.RootID) // touch expired calls and advanced it
	}
	// Continue the deepest running run of the tree: its outcome bubbles
	// up; else a suspended run whose calls were all decided.
	var next *store.Run
	for _, run := range t.order {
		if run.Status == store.Running || next == nil && run.Status == store.Suspended && decided(run, t.calls) {
			next = run
		}
	}
	if next == nil {
		return nil, conflictf("run %s is %s: only a run left running by a stopped process, or one whose calls were decided with --detach, can be continued", r.ID, r.Status)
	}
	if r, err = e.store.Run(ctx, next.ID); err != nil { // with its lease
		return nil, err
	}
	g, err := e.graph(ctx, r.SpecHash)
	if err != nil {
		return nil, err
	}
	switch {
	case r.Owner != "" && r.Expires.After(e.now()) && !deadOwner(r.Owner):
		return nil, conflictf("run %s is being advanced by %s (lease until %s)", r.ID, r.Owner, r.Expires.Format(time.RFC3339))
	case r.Owner != "" && r.Expires.After(e.now()):
		err = e.store.Takeover(ctx, e.lease, r.ID, r.Owner)
	default:
		err = e.store.Claim(ctx, e.lease, r.ID, r.Status)
	}
	if err != nil {
		return nil, err
	}
	r.Status = store.Running
	return e.advanceTree(ctx, g, r)
}

// decided reports whether suspended run r has work with no human: an
// approved call to run, or its latest turn's calls all done.
func decided(r *store.Run, calls []*store.Call) bool {
	n, approved := 0, false
	for _, c := range calls {
		if c.RunID != r.ID || c.Step != r.Step {
			continue
		}
		switch c.Status {
		case store.CallPending, store.CallInterrupted, store.CallExecuting:
			return false
		case store.CallApproved:
			approved = true
		}
		n++
	}
	return approved || n > 0
}

// pending returns the calls waiting for a human.
func pending(calls []*store.Call) []*store.Call {
	return slices.DeleteFunc(slices.Clone(calls), func(c *store.Call) bool {
		return c.Status != store.CallPending && c.Status != store.CallInterrupted
	})
}

// deadOwner reports whether a lease owner ("host:pid:token") is a process
// of this machine that no longer runs.
func deadOwner(owner string) bool {
	parts := strings.Split(owner, ":")
	if len(parts) != 3 {
		return false
	}
	host, _ := os.Hostname()
	pid, err := strconv.Atoi(parts[1])
	if parts[0] != host || err != nil || pid <= 0 {
		return false
	}
	return !processAlive(pid)
}

func find(calls []*store.Call, s store.CallStatus) *store.Call {
	for _, c := range calls {
		if c.Status == s {
			return c
		}
	}
	return nil
}

// modelTurn asks the model for its next turn and checkpoints the answer:
// final text completes the run; tool calls enter the ledger, each through
// the approval gate.
func (e *Engine) modelTurn(ctx context.Context, g *Graph, a *agentNode, r *store.Run, st *state, calls []*store.Call) ([]*store.Call, error) {
	node := a.model
	if n, ok := g.models[st.Model]; ok {
		node = n
	}
	llm, err := node.build()
	if err != nil {
		return nil, e.failErr(ctx, r, err)
	}
	defs, err := e.toolDefs(ctx, a)
	if err != nil {
		return nil, e.failErr(ctx, r, err)
	}
	var opts []llms.CallOption
	if len(defs) > 0 {
		opts = append(opts, llms.WithTools(defs))
	}
	if t := node.spec.Temperature; t != nil {
		opts = append(opts, llms.WithTemperature(*t))
	}
	if n := node.spec.MaxTokens; n > 0 {
		opts = append(opts, llms.WithMaxTokens(n))
	}
	var streamed bool
	if o := e.streamTo(r.ID, &streamed); o != nil {
		opts = append(opts, o)
	}
	resp, err := llm.GenerateContent(ctx, st.conversation(calls), opts...)
	if err == nil && (resp == nil || len(resp.Choices) == 0) {
		err = errors.New("the model returned no choices")
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // interrupted: leave the run as checkpointed
		}
		return nil, e.failErr(ctx, r, fmt.Errorf("model %s: %w", node.spec.Name, err))
	}
	// Grants are looked up only when a call would need approval.
	var grants []string
	var grantsErr error
	loadGrants := sync.OnceValue(func() []string {
		grants, grantsErr = e.store.Grants(ctx, r.ID)
		return grants
	})
	choice := resp.Choices[0]
	addUsage(&r.Usage, choice.GenerationInfo)
	msg := message{Role: "assistant", Text: choice.Content}
	r.Step++
	var newCalls []*store.Call
	var evs []store.Event
	live := 0 // events the hook has had already: text streamed live
	if choice.Content != "" {
		evs = append(evs, event(r.ID, EventTextDelta, map[string]any{"text": choice.Content}))
		if streamed {
			live = 1
		}
	}
	seq := len(calls)
	prefix := ""
	if r.ParentCall != "" {
		prefix = r.ParentCall + "/"
	}
	for _, tc := range choice.ToolCalls {
		if tc.FunctionCall == nil {
			continue
		}
		seq++
		// Call ids are unique in a run's whole tree: a child's calls carry
		// the id of the delegation that made the child.
		id := tc.ID
		if id == "" || slices.ContainsFunc(calls, func(c *store.Call) bool { return c.ID == prefix+id }) ||
			slices.ContainsFunc(newCalls, func(c *store.Call) bool { return c.ID == prefix+id }) {
			id = fmt.Sprintf("call_%d", seq)
		}
		id = prefix + id
		msg.ToolCalls = append(msg.ToolCalls, toolCallPart{ID: id, Tool: tc.FunctionCall.Name, Args: tc.FunctionCall.Arguments})
		c := e.gate(ctx, a, st, r, loadGrants, id, seq, tc.FunctionCall)
		if grantsErr != nil {
			return nil, grantsErr
		}
		newCalls = append(newCalls, c)
		evs = append(evs, event(r.ID, EventToolCall, map[string]any{"callId": c.ID, "tool": c.Tool, "args": c.Args}))
		switch {
		case c.Status == store.CallPending:
			fields := map[string]any{"callId": c.ID, "tool": c.Tool, "args": c.Args, "gate": c.Gate}
			if c.GateError != "" {
				fields["gateError"] = c.GateError
			}
			if !c.Deadline.IsZero() {
				fields["deadline"] = c.Deadline
			}
			evs = append(evs, event(r.ID, EventToolCallApproval, fields))
		case c.Status.Done():
			evs = append(evs, resultEvent(r.ID, c))
		}
	}
	finish := "tool-calls"
	if len(newCalls) == 0 {
		finish = "stop"
	}
	evs = append(evs, event(r.ID, EventStepFinish, map[string]any{"step": r.Step, "finishReason": finish}))
	st.Messages = append(st.Messages, msg)
	r.State = st.encode()
	if len(newCalls) == 0 {
		r.Status, r.Output = store.Completed, choice.Content
		evs = append(evs, event(r.ID, EventFinish, map[string]any{"output": r.Output}))
	}
	if err := e.store.Checkpoint(ctx, e.lease, r, newCalls, evs...); err != nil {
		return nil, err
	}
	e.emit(evs[live:])
	return newCalls, nil
}

// fail ends a run with an error.
func (e *Engine) fail(ctx context.Context, r *store.Run, cause error) (*RunView, error) {
	if err := e.failErr(ctx, r, cause); err != nil {
		return nil, err
	}
	return view(r, nil, nil), nil
}

// failErr ends a run with an error and reports only whether that was
// recorded.
func (e *Engine) failErr(ctx context.Context, r *store.Run, cause error) error {
	r.Status, r.Error = store.Failed, cause.Error()
	ev := event(r.ID, EventError, map[string]any{"error": r.Error})
	if err := e.store.Checkpoint(context.WithoutCancel(ctx), e.lease, r, nil, ev); err != nil {
		return err
	}
	e.emit([]store.Event{ev})
	return nil
}

// Work claims one run a worker should advance (see store.ClaimWork) and
// advances it as far as it goes; ok is false when there was none. agent,
// when set, limits it to trees whose root runs that agent.
func (e *Engine) Work(ctx context.Context, agent string) (v *RunView, ok bool, err error) {
	r, err := e.store.ClaimWork(ctx, e.lease, agent)
	if err != nil || r == nil {
		return nil, false, err
	}
	g, err := e.graph(ctx, r.SpecHash)
	if err != nil {
		// A run this build cannot continue: leave it to another.
		_ = e.store.Release(context.WithoutCancel(ctx), e.lease, r.ID)
		return nil, true, fmt.Errorf("work on run %s: %w", r.ID, err)
	}
	v, err = e.advanceTree(ctx, g, r)
	if err != nil {
		return nil, true, fmt.Errorf("work on run %s: %w", r.ID, err)
	}
	return v, true, nil
}

// Lease is the lease this engine holds runs with; its owner names the
// process.
func (e *Engine) Lease() store.Lease { return e.lease }
