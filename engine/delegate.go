package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentctl/agentctl/engine/store"
)

// delegate runs a delegation call: a child run of the sub-agent, in the
// same store and on the same spec snapshot, advanced here. Its final text
// becomes the call's result; while it waits for a human, so does the call
// (kind delegation), and the whole tree is suspended.
func (rn *runner) delegate(ctx context.Context, sub *agentNode, c *store.Call) error {
	e, g, r, st := rn.e, rn.g, rn.r, rn.st
	if depth := len(r.Path); st.MaxDepth > 0 && depth > st.MaxDepth {
		return rn.settle(ctx, c, store.CallFailed,
			fmt.Sprintf("error: delegation refused: the tree is already %d levels deep (maxDepth %d)", depth, st.MaxDepth))
	}
	var args struct {
		Task string `json:"task"`
	}
	if err := json.Unmarshal(c.Args, &args); err != nil {
		return rn.settle(ctx, c, store.CallFailed, "error: invalid arguments: "+err.Error())
	}
	// Policy flows down: a sub-agent never runs pre-approved because it
	// was delegated to. The run's --require-approval is in its state; a
	// supervisor's requireToolApproval is read from the spec, with the
	// supervisor's policy, at each gate (gating).
	cst := &state{RequireApproval: st.RequireApproval, MaxDepth: st.MaxDepth, Replay: st.Replay, Labels: st.Labels}
	if sub.spec.Instructions != "" {
		cst.Messages = append(cst.Messages, message{Role: "system", Text: sub.spec.Instructions})
	}
	cst.Messages = append(cst.Messages, message{Role: "user", Text: args.Task})
	child := &store.Run{
		ID:         e.newRunID(),
		Agent:      sub.spec.Name,
		Status:     store.Running,
		Input:      args.Task,
		SpecHash:   r.SpecHash,
		State:      cst.encode(),
		ParentID:   r.ID,
		ParentCall: c.ID,
		RootID:     r.RootID,
		Path:       append(append([]string(nil), r.Path...), sub.spec.Name),
		StartedBy:  r.StartedBy,
	}
	p, _ := json.Marshal(map[string]string{"runId": child.ID})
	m := store.Move{RunID: r.ID, CallID: c.ID, From: store.CallApproved, To: store.CallPending, Kind: store.KindDelegation, Payload: p}
	// The child and the call that waits on it, in one commit.
	if err := rn.write(ctx, store.Writes{Create: []store.NewRun{{Run: child, Spec: g.snapshot}}, Moves: []store.Move{m}}, 0); err != nil {
		return err
	}
	c.Status, c.Kind, c.Payload = store.CallPending, store.KindDelegation, p
	v, err := e.advance(ctx, g, child)
	if err != nil {
		return err
	}
	if v.Status == store.Stalled {
		// Nothing waits for a human: the tree is stalled down to the child
		// whose model failed, where agentctl continue picks it up.
		return rn.stall(ctx, fmt.Errorf("sub-agent %s (run %s) stalled: %s", sub.spec.Name, child.ID, v.Error))
	}
	if !v.Status.Terminal() {
		return nil // the child waits for a human; so does this call
	}
	to, result := outcome(v)
	done := *c
	done.Status, done.Result = to, result
	ev := resultEvent(r, &done)
	evs := []store.Event{ev} // stamped with At as stored
	if _, err := e.store.Settle(ctx, e.lease, store.Move{RunID: r.ID, CallID: c.ID, To: to, Result: result}, evs...); err != nil {
		return err
	}
	*c = done
	e.emit(evs)
	return nil
}

// outcome is what a delegation call gets from its finished child run.
func outcome(v *RunView) (store.CallStatus, string) {
	if v.Status == store.Failed {
		return store.CallFailed, "error: the sub-agent failed: " + v.Error
	}
	return store.CallSucceeded, v.Output
}

// advanceTree advances a run and, when it is a child that finishes, hands
// its outcome up its tree; it returns the view of the run or, for a
// child, of its root.
func (e *Engine) advanceTree(ctx context.Context, g *Graph, r *store.Run) (*RunView, error) {
	return e.advanceTreeHeld(ctx, g, r, held{})
}

// advanceTreeHeld is advanceTree of a run whose runner starts holding h.
func (e *Engine) advanceTreeHeld(ctx context.Context, g *Graph, r *store.Run, h held) (*RunView, error) {
	v, err := e.advanceHeld(ctx, g, r, h)
	if err != nil || r.ParentID == "" {
		return v, err
	}
	switch v.Status {
	case store.Stalled:
		return e.stallUp(ctx, r)
	case store.Suspended:
		if err := e.waitUp(ctx, r); err != nil {
			return nil, err
		}
	}
	return e.bubble(ctx, g, v, r)
}

// waitUp marks suspended again the stalled ancestors of r, a child that
// was continued and now waits for a human.
func (e *Engine) waitUp(ctx context.Context, r *store.Run) error {
	for r.ParentID != "" {
		parent, err := e.store.Run(ctx, r.ParentID)
		if err != nil {
			return err
		}
		if parent.Status != store.Stalled || e.store.Claim(ctx, e.lease, parent.ID, store.Stalled) != nil {
			return nil
		}
		err = e.store.Suspend(ctx, e.lease, parent)
		if errors.Is(err, store.ErrNotIdle) {
			// It has work of its own meanwhile: a worker takes it.
			return e.store.Release(context.WithoutCancel(ctx), e.lease, parent.ID)
		}
		if err != nil {
			return err
		}
		r = parent
	}
	return nil
}

// stallUp marks stalled the ancestors of stalled child r that wait on
// nothing else (no other call of theirs pending, approved or
// interrupted), so that the root says what its tree needs: agentctl
// continue. It returns the root's view.
func (e *Engine) stallUp(ctx context.Context, r *store.Run) (*RunView, error) {
	for r.ParentID != "" {
		parent, err := e.store.Run(ctx, r.ParentID)
		if err != nil {
			return nil, err
		}
		calls, err := e.store.Calls(ctx, parent.ID)
		if err != nil {
			return nil, err
		}
		busy := parent.Status != store.Suspended || slices.ContainsFunc(calls, func(c *store.Call) bool {
			return c.Step == parent.Step && c.ID != r.ParentCall && !c.Status.Done()
		})
		if busy || e.store.Claim(ctx, e.lease, parent.ID, store.Suspended) != nil {
			break // it waits for a human, or another process has it
		}
		if err := e.end(ctx, parent, store.Stalled, fmt.Sprintf("sub-agent %s (run %s) stalled: %s", r.Agent, r.ID, r.Error)); err != nil {
			return nil, err
		}
		r = parent
	}
	return e.Inspect(ctx, r.RootID)
}

// bubble hands a finished child run's outcome up to its parent's
// delegation call and, when that leaves this process holding the parent,
// advances the parent, and so on up to the root. It returns the root's
// view.
func (e *Engine) bubble(ctx context.Context, g *Graph, child *RunView, r *store.Run) (*RunView, error) {
	for r.ParentID != "" && child.Status.Terminal() {
		to, result := outcome(child)
		ev := event(parentOf(r), ToolResult{CallID: r.ParentCall, Tool: r.Agent, Status: to, Result: ResultJSON(result, false)})
		evs := []store.Event{ev} // stamped with At as stored
		claimed, err := e.store.Settle(ctx, e.lease, store.Move{RunID: r.ParentID, CallID: r.ParentCall, To: to, Result: result}, evs...)
		if err != nil {
			return nil, err
		}
		e.emit(evs)
		parent, err := e.store.Run(ctx, r.ParentID)
		if err != nil {
			return nil, err
		}
		if !claimed {
			break // another process holds the parent and will see the result
		}
		if child, err = e.advance(ctx, g, parent); err != nil {
			return nil, err
		}
		r = parent
	}
	return e.Inspect(ctx, r.RootID)
}

// parentOf names a child run's parent, for its events: its id and path.
func parentOf(r *store.Run) *store.Run {
	return &store.Run{ID: r.ParentID, Path: r.Path[:max(len(r.Path)-1, 0)]}
}
