package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/internal/proc"
)

// runner advances one run this process holds. It holds what every step of
// the run needs (the engine, the compiled spec, the agent, the run, its
// checkpoint and its call ledger); the run loop's methods hang off it.
type runner struct {
	e  *Engine
	g  *Graph
	a  *agentNode
	r  *store.Run
	st *state
	// calls is the run's ledger as this process knows it: its own writes;
	// other processes only decide pending calls, which Suspend detects.
	calls []*store.Call

	held held // written, not yet committed (see hold.go)

	grants       []string // tools approved for the rest of the run
	grantsLoaded bool
	latency      time.Duration // of the last model call
}

// step is advance without the handling of interruption.
func (e *Engine) step(ctx context.Context, g *Graph, r *store.Run, h held) (*RunView, error) {
	e.inflight.Add(1)
	defer e.inflight.Add(-1)
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
	calls := h.calls
	if len(h.w.Create) == 0 && !h.read { // a new run has none
		if calls, err = e.store.Calls(ctx, r.ID); err != nil {
			return nil, err
		}
	}
	ctx, span := e.startAgent(ctx, r, st)
	rn := &runner{e: e, g: g, a: a, r: r, st: st, calls: calls, held: h}
	v, err := rn.loop(ctx)
	if err != nil {
		// Interrupted, or stopped: what is held is committed, so that the
		// run is released as last seen.
		if ferr := rn.flush(context.WithoutCancel(ctx)); ferr != nil {
			err = errors.Join(err, ferr)
		}
	}
	endAgent(span, v, err)
	return v, err
}

// loop runs the agent loop until the run completes, fails or waits for a
// human: approved calls are executed, calls a dead process left executing
// recovered, and otherwise the model takes a turn.
func (rn *runner) loop(ctx context.Context) (*RunView, error) {
	r := rn.r
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if r.Status.Stopped() {
			return view(r, nil, nil), nil
		}
		turn := slices.DeleteFunc(slices.Clone(rn.calls), func(c *store.Call) bool { return c.Step != r.Step })
		if id := rn.held.started; id != "" {
			// Started by the decision or the claim that claimed the run:
			// run it first. Its start is committed, so it is the step in
			// flight, run even when the engine is asked to stop.
			rn.held.started = ""
			if i := slices.IndexFunc(turn, func(c *store.Call) bool { return c.ID == id }); i >= 0 && turn[i].Status == store.CallExecuting {
				if err := rn.execute(ctx, turn[i]); err != nil {
					return nil, err
				}
				continue
			}
		}
		if rn.e.stopping() {
			return nil, errStopped
		}
		if c := find(turn, store.CallApproved); c != nil {
			if err := rn.execute(ctx, c); err != nil {
				return nil, err
			}
			continue
		}
		if c := find(turn, store.CallExecuting); c != nil {
			// Left executing by a process that died: its side effect may
			// have happened. Only an idempotent tool runs again by itself.
			if err := rn.recover(ctx, c); err != nil {
				return nil, err
			}
			continue
		}
		if find(turn, store.CallPending) != nil || find(turn, store.CallInterrupted) != nil {
			v, again, err := rn.suspend(ctx)
			if again {
				continue
			}
			return v, err
		}
		if max := rn.a.spec.MaxSteps; r.Step-rn.st.TurnStart >= max {
			if err := rn.fail(ctx, fmt.Errorf("%w: agent %s allows %d model turns", ErrMaxSteps, rn.a.spec.Name, max)); err != nil {
				return nil, err
			}
			return view(r, nil, nil), nil
		}
		if err := rn.turn(ctx); err != nil {
			return nil, err
		}
	}
}

// suspend marks the run suspended, waiting for a human. again reports
// that a decision arrived meanwhile: the ledger is read anew and the loop
// goes on.
func (rn *runner) suspend(ctx context.Context) (v *RunView, again bool, err error) {
	e, r := rn.e, rn.r
	err = rn.write(ctx, store.Writes{Suspend: r}, 0)
	if errors.Is(err, store.ErrNotIdle) {
		rn.calls, err = e.store.Calls(ctx, r.ID)
		return nil, err == nil, err
	}
	if err != nil {
		return nil, false, err
	}
	suspended(ctx, rn.calls)
	if slices.ContainsFunc(rn.calls, func(c *store.Call) bool { return c.Kind == store.KindDelegation && c.Status == store.CallPending }) {
		v, err = e.Inspect(ctx, r.ID) // what waits is in the subtree
		return v, false, err
	}
	return view(r, pending(rn.calls), nil), false, nil
}

// recover deals with a call found executing while this process holds the
// run, that is, left so by a process that died. What the call's command
// left running on this host is killed first, and gone, so that a retry
// never runs beside it. A command on another host is not seen.
func (rn *runner) recover(ctx context.Context, c *store.Call) error {
	why := "interrupted: the process running this call stopped; it may or may not have taken effect"
	n, err := proc.KillCall(ctx, rn.r.ID, c.ID)
	if err != nil {
		return fmt.Errorf("call %s: kill what its command left running: %w", c.ID, err)
	}
	if n > 0 {
		verb := "were"
		if n == 1 {
			verb = "was"
		}
		why += fmt.Sprintf(" (%d of its processes, left running, %s killed)", n, verb)
	}
	return rn.interrupt(ctx, c, why)
}

// interrupt records a call whose tool did not finish as interrupted, for a
// human to retry or resolve (an idempotent tool is approved to run again):
// never a failure told to the model.
func (rn *runner) interrupt(ctx context.Context, c *store.Call, why string) error {
	m := store.Move{RunID: rn.r.ID, CallID: c.ID, From: store.CallExecuting, To: store.CallInterrupted, Kind: store.KindInterrupted,
		Result: why}
	if err := rn.write(ctx, store.Writes{Moves: []store.Move{m}}, 0); err != nil {
		return err
	}
	c.Status, c.Kind, c.Result = m.To, m.Kind, m.Result
	if t := rn.a.decl(c.Tool); t != nil && t.Idempotent {
		return rn.autoRetry(ctx, c)
	}
	return nil
}

// restInterrupted suspends the run once its call c, interrupted as the
// process stops, waits for a human (retry or resolve) and no other call
// of the run is left to run: every read then tells the same story, a
// suspended run with a call pending, as continue would find it.
func (rn *runner) restInterrupted(ctx context.Context, c *store.Call) error {
	if c.Status != store.CallInterrupted || slices.ContainsFunc(rn.calls, func(x *store.Call) bool {
		return x.ID != c.ID && (x.Status == store.CallApproved || x.Status == store.CallExecuting)
	}) {
		return nil
	}
	_, _, err := rn.suspend(ctx)
	return err
}

// autoRetry runs an idempotent tool's interrupted call again, once: the
// retry is a decision of agentctl's own (Actor), in the audit trail. A
// call interrupted again after it waits for a human, as any other: a
// tool that kills its process each time is not run for ever.
func (rn *runner) autoRetry(ctx context.Context, c *store.Call) error {
	ds, err := rn.e.store.Decisions(ctx, rn.r.ID)
	if err != nil {
		return err
	}
	for _, d := range ds {
		if d.CallID == c.ID && d.Action == store.Retry && d.By == Actor {
			return nil // retried once already
		}
	}
	d := &store.Decision{RunID: rn.r.ID, CallID: c.ID, Action: store.Retry, By: Actor, OSUser: Actor,
		Reason: "idempotent: run again, once, after its process stopped", ArgsBefore: c.Args}
	if _, err := rn.e.store.Decide(ctx, []*store.Decision{d}, rn.e.lease, decisionEvent(rn.r, c, d)); err != nil {
		return fmt.Errorf("retry call %s, idempotent: %w", c.ID, err)
	}
	c.Status, c.Kind, c.Result = store.CallApproved, "", ""
	return nil
}

// granted reports whether a human approved the tool for the rest of the
// run (approve --always). Grants are read once, when first needed.
func (rn *runner) granted(ctx context.Context, tool string) (bool, error) {
	if !rn.grantsLoaded {
		g, err := rn.e.store.Grants(ctx, rn.r.ID)
		if err != nil {
			return false, err
		}
		rn.grants, rn.grantsLoaded = g, true
	}
	return slices.Contains(rn.grants, tool), nil
}

// fail ends the run with an error and reports only whether that was
// recorded.
func (rn *runner) fail(ctx context.Context, cause error) error {
	return rn.end(ctx, store.Failed, cause.Error())
}

// end ends the run (failed, or stalled) with why, committed with the
// event that reports it and what the runner holds, and releases it.
func (rn *runner) end(ctx context.Context, status store.Status, why string) error {
	r := rn.r
	r.Status, r.Error = status, why
	ev := event(r, ErrorEvent{Error: why}) // stamped with At as stored
	if status == store.Stalled {
		ev = event(r, StalledEvent{Error: why})
	}
	return rn.write(context.WithoutCancel(ctx), store.Writes{Run: r}, 0, ev)
}
