package engine

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// Actor is the name decisions agentctl takes on its own are recorded by.
const Actor = "agentctl"

// touch loads a run and its whole tree, first declining (reason: expired)
// the pending calls in the tree whose deadline has passed, and advancing
// the runs that frees. Only the commands that decide or advance a run go
// through it (a decision, send, continue), so a deadline holds even when
// no cron job runs agentctl expire; reads use load and only show a call
// as overdue.
func (e *Engine) touch(ctx context.Context, id string) (*store.Run, *tree, error) {
	r, t, _, err := e.touched(ctx, id)
	return r, t, err
}

// touched is touch, reporting also whether it declined anything.
func (e *Engine) touched(ctx context.Context, id string) (*store.Run, *tree, bool, error) {
	r, t, err := e.load(ctx, id)
	if err != nil {
		return nil, nil, false, err
	}
	took, err := e.escalateTree(ctx, t)
	if err != nil {
		return nil, nil, false, err
	}
	if took {
		if r, t, err = e.load(ctx, id); err != nil {
			return nil, nil, false, err
		}
	}
	overdue := due(t.calls, e.now())
	if len(overdue) == 0 {
		return r, t, false, nil
	}
	expired := false
	for _, runID := range runsOf(overdue) {
		ok, err := e.expire(ctx, t.runs[runID], overdue)
		if err != nil {
			return nil, nil, false, err
		}
		expired = expired || ok
	}
	r, t, err = e.load(ctx, id)
	return r, t, expired, err
}

// runsOf lists the runs the calls belong to, in order of first mention.
func runsOf(calls []*store.Call) []string {
	var ids []string
	for _, c := range calls {
		if !slices.Contains(ids, c.RunID) {
			ids = append(ids, c.RunID)
		}
	}
	return ids
}

// due returns the pending calls past their deadline.
func due(calls []*store.Call, now time.Time) []*store.Call {
	var out []*store.Call
	for _, c := range calls {
		if c.Status == store.CallPending && !c.Deadline.IsZero() && c.Deadline.Before(now) {
			out = append(out, c)
		}
	}
	return out
}

// byActor is a decision agentctl takes on its own on call c of run r
// (an expiry, an escalation's decide step), which declines the call
// with result, and its events: the decision's and the call's result.
func byActor(r *store.Run, c *store.Call, action store.Action, reason, result string) (*store.Decision, []store.Event) {
	d := &store.Decision{RunID: r.ID, CallID: c.ID, Action: action, By: Actor, OSUser: Actor,
		Reason: reason, ArgsBefore: c.Args, Result: result}
	done := *c
	done.Status, done.Result = store.CallDeclined, result
	return d, []store.Event{decisionEvent(r, c, d), resultEvent(r, &done)}
}

// expire declines a run's overdue calls and, when that leaves this
// process holding the run, advances it. It reports whether it expired
// anything; losing the race to another decider is not an error.
func (e *Engine) expire(ctx context.Context, r *store.Run, calls []*store.Call) (bool, error) {
	overdue := slices.DeleteFunc(due(calls, e.now()), func(c *store.Call) bool { return c.RunID != r.ID })
	if len(overdue) == 0 {
		return false, nil
	}
	g, err := e.graph(ctx, r.SpecHash)
	if err != nil {
		return false, err
	}
	var ds []*store.Decision
	var evs []store.Event
	for _, c := range overdue {
		d, dev := byActor(r, c, store.Expire, "expired", expired(c.Deadline))
		ds, evs = append(ds, d), append(evs, dev...)
	}
	_, err = e.record(ctx, g, r, batch{ds: ds, evs: evs})
	if errors.Is(err, store.ErrConflict) {
		return false, nil // decided meanwhile by someone else
	}
	return err == nil, err
}

// Swept is what ExpireAll did.
type Swept struct {
	// Expired are the runs it expired calls of.
	Expired []string
	// Decided are the runs an escalation step decided a call of.
	Decided []string
	// Steps counts the escalation steps it took (reminders and wider
	// approvers too).
	Steps int
}

// Runs are the runs it advanced: expired, then decided by a step.
func (s Swept) Runs() []string { return append(slices.Clone(s.Expired), s.Decided...) }

// ExpireAll declines every overdue call of every run (agentctl expire,
// a worker) and advances the runs it thereby holds; then it takes the
// due escalation steps (EscalateAll). agent, when set, limits it to
// trees whose root runs that agent.
func (e *Engine) ExpireAll(ctx context.Context, agent string) (Swept, error) {
	var sw Swept
	ids, err := e.store.Expired(ctx, e.now())
	if err != nil {
		return sw, err
	}
	sw.Expired, err = e.sweep(ctx, ids, agent, func(r *store.Run) (bool, error) {
		calls, err := e.store.Calls(ctx, r.ID)
		if err != nil {
			return false, err
		}
		return e.expire(ctx, r, calls)
	})
	if err != nil {
		return sw, err
	}
	sw.Decided, sw.Steps, err = e.EscalateAll(ctx, agent)
	return sw, err
}
