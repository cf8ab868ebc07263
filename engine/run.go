package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// StartOptions describe a new run.
type StartOptions struct {
	Agent string
	Input string
	// RequireApproval makes every tool call of the run wait for a human.
	RequireApproval bool
	// Labels are the run's labels (run --label KEY=VALUE): policy rules
	// read them.
	Labels map[string]string
	// Model, when set, replaces the agent's model for this run.
	Model string
	// Detach queues the run for a worker (agentctl worker) instead of
	// advancing it here.
	Detach bool
	// StartedBy is the OS user starting the run (separateDuties); on a
	// server, the authenticated principal.
	StartedBy string
	// Created, when set, is called with the run's id once the run is
	// stored, before it advances: a server answers from then on.
	Created func(runID string)
	// Request, when set, is recorded with the run as it is created: the
	// request that created it (an idempotency key). A key already
	// recorded fails the start with store.ErrRequestSeen.
	Request *store.Request
}

// Start creates a run of an agent and advances it until it completes,
// fails or waits for a human. The run is durable from the first write.
func (e *Engine) Start(ctx context.Context, g *Graph, opts StartOptions) (*RunView, error) {
	a, ok := g.agents[opts.Agent]
	if !ok {
		return nil, &UnknownError{What: "agent", Name: opts.Agent, Known: g.Agents()}
	}
	if opts.Model != "" {
		if _, ok := g.models[opts.Model]; !ok {
			return nil, &UnknownError{What: "model", Name: opts.Model, Known: g.modelNames()}
		}
	}
	if err := checkLabels(opts.Labels); err != nil {
		return nil, err
	}
	if err := g.checkModels(a, opts.Model); err != nil {
		return nil, err
	}
	st := &state{RequireApproval: opts.RequireApproval, MaxDepth: a.spec.MaxDepth, Model: opts.Model, Replay: e.replay, Labels: opts.Labels}
	if a.spec.Instructions != "" {
		st.Messages = append(st.Messages, message{Role: "system", Text: a.spec.Instructions})
	}
	st.Messages = append(st.Messages, message{Role: "user", Text: opts.Input})
	id := e.newRunID()
	r := &store.Run{
		ID:        id,
		RootID:    id, // before it is stored: a sub-agent's run may be created with it
		Path:      []string{opts.Agent},
		Agent:     opts.Agent,
		Status:    store.Running,
		Input:     opts.Input,
		SpecHash:  g.hash,
		Request:   opts.Request,
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
	e.mu.Lock()
	e.graphs[g.hash] = g
	e.mu.Unlock()
	create := store.Writes{Create: []store.NewRun{{Run: r, Spec: g.snapshot}}}
	if opts.Created == nil {
		// No one sees the run's id before its first commit: the run is
		// created with it (see held).
		return e.advanceHeld(ctx, g, r, held{w: create})
	}
	if err := e.store.CreateRun(ctx, r, g.snapshot, e.lease); err != nil {
		return nil, err
	}
	opts.Created(r.ID)
	return e.advance(ctx, g, r)
}

// advance drives a run this process holds until it completes, fails or
// waits for a human, checkpointing after every step, and returns the run
// as it left it. Interrupted (ctx done) or stopped (Config.Stop), it
// releases the run, which stays as last checkpointed for agentctl continue.
func (e *Engine) advance(ctx context.Context, g *Graph, r *store.Run) (*RunView, error) {
	return e.advanceHeld(ctx, g, r, held{})
}

// advanceHeld is advance of a run whose runner starts holding h (a new
// run's creation).
func (e *Engine) advanceHeld(ctx context.Context, g *Graph, r *store.Run, h held) (*RunView, error) {
	v, err := e.step(ctx, g, r, h)
	var child *InterruptedError // a sub-agent's run, stopped within this one's step
	if err != nil && (ctx.Err() != nil || errors.Is(err, errStopped) || errors.As(err, &child)) {
		stopped := &InterruptedError{RunID: r.RootID}
		if err := e.store.Release(context.WithoutCancel(ctx), e.lease, r.ID); err != nil {
			return nil, errors.Join(stopped, err) // the run stays held until its lease runs out
		}
		return nil, stopped
	}
	return v, err
}

// Continue advances a run that is ready to go on with no human: one left
// running by a process that stopped (Ctrl-C, a crash), from its last
// checkpoint; one whose calls were decided with --detach; one with a call
// past its deadline, which it first declines. A run whose process died on
// this machine is taken over at once; otherwise once its lease has run
// out.
func (e *Engine) Continue(ctx context.Context, runID string) (*RunView, error) {
	r, t, expired, err := e.touched(ctx, runID)
	if err != nil {
		return nil, err
	}
	if expired {
		return e.Inspect(ctx, r.RootID) // it declined overdue calls and advanced their runs
	}
	// Continue the deepest running or stalled run of the tree: its outcome
	// bubbles up; else a suspended run whose calls were all decided.
	var next *store.Run
	for _, run := range t.order {
		if run.Status == store.Running || run.Status == store.Stalled || next == nil && run.Status == store.Suspended && decided(run, t.calls) {
			next = run
		}
	}
	if next == nil {
		return nil, &NotReadyError{RunID: r.ID, Status: r.Status}
	}
	if r, err = e.store.Run(ctx, next.ID); err != nil { // with its lease
		return nil, err
	}
	g, err := e.graph(ctx, r.SpecHash)
	if err != nil {
		return nil, err
	}
	if err := e.ready(g, t.root); err != nil {
		return nil, usagef("continue run %s: %v: nothing was changed", r.ID, err)
	}
	// Leased as the store counts it: to the millisecond, the expiry
	// included (else, in that millisecond, Claim finds the run held).
	leased := r.Owner != "" && !r.Expires.Before(e.now().Truncate(time.Millisecond))
	switch {
	case leased && !HolderDead(r.Owner):
		return nil, conflictf("run %s is being advanced by %s (lease until %s)", r.ID, r.Owner, r.Expires.Format(time.RFC3339))
	case leased:
		err = e.store.Takeover(ctx, e.lease, r.ID, r.Owner)
	default:
		err = e.store.Claim(ctx, e.lease, r.ID, r.Status)
	}
	if err != nil {
		return nil, err
	}
	r.Status, r.Error = store.Running, "" // a stalled run's error is past
	return e.advanceTree(ctx, g, r)
}

// decided reports whether suspended run r has work with no human: an
// approved call to run (others of its turn may still wait), or its
// latest turn's calls all done.
func decided(r *store.Run, calls []*store.Call) bool {
	n, waiting := 0, false
	for _, c := range calls {
		if c.RunID != r.ID || c.Step != r.Step {
			continue
		}
		switch c.Status {
		case store.CallApproved:
			return true
		case store.CallPending, store.CallInterrupted, store.CallExecuting:
			waiting = true
		}
		n++
	}
	return n > 0 && !waiting
}

// pending returns the calls waiting for a human.
func pending(calls []*store.Call) []*store.Call {
	return slices.DeleteFunc(slices.Clone(calls), func(c *store.Call) bool {
		return c.Status != store.CallPending && c.Status != store.CallInterrupted
	})
}

func find(calls []*store.Call, s store.CallStatus) *store.Call {
	for _, c := range calls {
		if c.Status == s {
			return c
		}
	}
	return nil
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
	return e.end(ctx, r, store.Failed, cause.Error())
}

// end ends a run this process holds in status (failed, or stalled) with
// why, checkpointed with the event that reports it, and releases it.
func (e *Engine) end(ctx context.Context, r *store.Run, status store.Status, why string) error {
	r.Status, r.Error = status, why
	evs := []store.Event{event(r, ErrorEvent{Error: why})} // stamped with At as stored
	if status == store.Stalled {
		evs[0] = event(r, StalledEvent{Error: why})
	}
	if err := e.store.Checkpoint(context.WithoutCancel(ctx), e.lease, r, nil, evs...); err != nil {
		return err
	}
	e.emit(evs)
	return nil
}

// Work claims one run a worker should advance (see store.ClaimStart) and
// advances it as far as it goes; ok is false when there was none. agent,
// when set, limits it to trees whose root runs that agent. The claim
// reads the run's calls and, when the call to run first is a plain
// tool's, starts it (store.ClaimStart): claim, read and start, one round
// trip.
func (e *Engine) Work(ctx context.Context, agent string) (v *RunView, ok bool, err error) {
	w, err := e.store.ClaimStart(ctx, e.lease, agent, e.plainTools())
	if err != nil || w == nil {
		return nil, false, err
	}
	r := w.Run
	g, err := e.graph(ctx, r.SpecHash)
	if err != nil {
		// A run this build cannot continue: leave it to another.
		_ = e.store.Release(context.WithoutCancel(ctx), e.lease, r.ID)
		return nil, true, fmt.Errorf("work on run %s: %w", r.ID, err)
	}
	// A call the claim started is of a graph compiled already (plainTools):
	// the graph was found, and the runner runs the call first.
	v, err = e.advanceTreeHeld(ctx, g, r, held{started: w.Started, calls: w.Calls, read: true})
	if err != nil {
		return nil, true, fmt.Errorf("work on run %s: %w", r.ID, err)
	}
	return v, true, nil
}

// Lease is the lease this engine holds runs with; its owner names the
// process.
func (e *Engine) Lease() store.Lease { return e.lease }

// ready checks what the model turns of root's tree need (each agent's
// model, its key; the cassette of a run started with --replay) before a
// process commits to advancing the tree, so that a decision, send or
// continue that could not ask the model changes nothing.
func (e *Engine) ready(g *Graph, root *store.Run) error {
	a, ok := g.agents[root.Agent]
	if !ok {
		return fmt.Errorf("agent %q is not in the run's spec", root.Agent)
	}
	st, err := decodeState(root)
	if err != nil {
		return err
	}
	if st.Replay != "" && e.replay == "" {
		return fmt.Errorf("the run was started with --replay %s: pass --replay to answer its model from a cassette; a live model would answer instead", st.Replay)
	}
	return g.checkModels(a, st.Model)
}
