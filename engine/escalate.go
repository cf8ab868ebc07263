package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/internal/duration"
	"github.com/agentctl/agentctl/notify"
	"github.com/agentctl/agentctl/spec"
)

// EscalatedEvent reports a step of the escalation ladder of a call
// waiting for approval (docs/escalation.md): its place in the ladder
// (from 1), its kind, and what it did.
type EscalatedEvent struct {
	After string `json:"after"` // the step's after:, as 15m
	// Approvers are those an addApprovers step added.
	Approvers []string `json:"approvers,omitempty"`
	CallID    string   `json:"callId"`
	Decide    string   `json:"decide,omitempty"` // decline or expire
	Kind      string   `json:"kind"`             // remind, addApprovers or decide
	// Notify are the step's own targets, notified instead of the call's.
	Notify []notify.Target `json:"notify,omitempty"`
	Reason string          `json:"reason,omitempty"`
	Step   int             `json:"step"`
	Tool   string          `json:"tool"`
}

func (EscalatedEvent) eventType() store.EventType { return EventEscalated }

// EscalationObserver is an Observer that also counts the escalation
// steps the engine takes (the server's metrics).
type EscalationObserver interface {
	// Escalation reports step (from 1) of a ladder, of kind remind,
	// addApprovers or decide, taken by this process.
	Escalation(step int, kind string)
}

// observeEscalation reports a step taken to the observer, if it counts
// them.
func (e *Engine) observeEscalation(step int, kind string) {
	if o, ok := e.observer.(EscalationObserver); ok {
		o.Escalation(step, kind)
	}
}

// ladderOf returns the escalation ladder of the calls of tool in run r
// (spec.Spec.Escalation); nil when r's agent is not in g.
func (g *Graph) ladderOf(r *store.Run, tool string) []spec.EscalationStep {
	a, ok := g.agents[r.Agent]
	if !ok {
		return nil
	}
	return g.spec.Escalation(a.spec, a.decl(tool))
}

// escalating reports whether g declares an escalation ladder anywhere.
func (g *Graph) escalating() bool {
	return slices.ContainsFunc(g.spec.Ladders(), func(l []spec.EscalationStep) bool { return len(l) > 0 })
}

// escalationNotifies reports whether a step of a ladder of g declares
// notify targets of its own.
func (g *Graph) escalationNotifies() bool {
	for _, l := range g.spec.Ladders() {
		if slices.ContainsFunc(l, func(s spec.EscalationStep) bool { return len(s.Notify) > 0 }) {
			return true
		}
	}
	return false
}

// escalate takes the steps of run r's calls waiting for approval that
// are due at the engine's now and have not happened, each in its
// ladder's order, once: a step another process took first, or a call
// decided meanwhile, is left alone. It reports whether a step decided a
// call, which advances the run, and how many steps it took.
func (e *Engine) escalate(ctx context.Context, r *store.Run, calls []*store.Call) (decided bool, took int, err error) {
	if !slices.ContainsFunc(calls, func(c *store.Call) bool { return c.RunID == r.ID && c.Kind == store.KindApproval }) {
		return false, 0, nil
	}
	g, err := e.graph(ctx, r.SpecHash)
	if err != nil || !g.escalating() {
		return false, 0, err
	}
	done, err := e.store.Escalations(ctx, []string{r.ID})
	if err != nil {
		return false, 0, err
	}
	now := e.now()
	for _, c := range calls {
		if c.RunID != r.ID || c.Status != store.CallPending || c.Kind != store.KindApproval {
			continue
		}
		for i, s := range g.ladderOf(r, c.Tool) {
			if s.Kind == "" || c.CreatedAt.Add(s.After).After(now) {
				break
			}
			if slices.ContainsFunc(done[r.ID], func(x *store.Escalation) bool { return x.CallID == c.ID && x.Step == i+1 }) {
				continue
			}
			ok, err := e.fire(ctx, g, r, c, i+1)
			if err != nil {
				return decided, took, fmt.Errorf("escalate call %s of run %s: %w", c.ID, r.ID, err)
			}
			if ok {
				took++
				e.observeEscalation(i+1, s.Kind)
			}
			if s.Kind == spec.StepDecide {
				decided = decided || ok
				break
			}
		}
	}
	return decided, took, nil
}

// fire takes step n (from 1) of the ladder of call c of run r, reporting
// whether this process took it. A decide step declines or expires the
// call in the same transaction, as agentctl (Actor).
func (e *Engine) fire(ctx context.Context, g *Graph, r *store.Run, c *store.Call, n int) (bool, error) {
	s := g.ladderOf(r, c.Tool)[n-1]
	x := &store.Escalation{RunID: r.ID, CallID: c.ID, Step: n, Kind: s.Kind, At: e.now()}
	ev := EscalatedEvent{After: duration.Short(s.After), CallID: c.ID, Kind: s.Kind, Notify: s.Notify, Step: n, Tool: c.Tool}
	if s.Kind == spec.StepAddApprovers {
		ev.Approvers = append(slices.Clone(s.AddApprovers.Users), prefixed("group:", s.AddApprovers.Groups)...)
	}
	if s.Kind != spec.StepDecide {
		evs := []store.Event{event(r, ev)}
		ok, err := e.store.Escalate(ctx, x, evs...)
		if ok {
			e.emit(evs)
		}
		return ok, err
	}
	ev.Decide = s.Decide
	ev.Reason = cmp.Or(s.Reason, "no decision within "+ev.After)
	action, result := store.Decline, declined(Actor, ev.Reason)
	if s.Decide == "expire" {
		action, result = store.Expire, escalationExpired(c.CreatedAt.Add(s.After), ev.Reason)
	}
	d, dev := byActor(r, c, action, ev.Reason, result)
	d.Escalation = x
	evs := append([]store.Event{event(r, ev)}, dev...)
	_, err := e.record(ctx, g, r, batch{ds: []*store.Decision{d}, evs: evs})
	if errors.Is(err, store.ErrConflict) {
		return false, nil // decided meanwhile, or the step taken by another
	}
	return err == nil, err
}

// escalationExpired is the tool result of a call an expire step ended.
func escalationExpired(at time.Time, reason string) string {
	return fmt.Sprintf("The tool call was not decided in time (%s: %s) and was not executed. "+
		"Do not retry this call unless the user asks you to.", at.UTC().Format(time.RFC3339), reason)
}

// EscalateAll takes the due steps of the escalation ladders of every
// call waiting for approval (agentctl expire, a worker, a server);
// agent, when set, limits it to trees whose root runs that agent. It
// returns the ids of the runs a step decided a call of, and how many
// steps it took.
func (e *Engine) EscalateAll(ctx context.Context, agent string) (decided []string, steps int, err error) {
	ids, err := e.store.AwaitingApproval(ctx)
	if err != nil || len(ids) == 0 {
		return nil, 0, err
	}
	return e.escalateRuns(ctx, ids, agent)
}

// escalateRuns is EscalateAll for the runs ids.
func (e *Engine) escalateRuns(ctx context.Context, ids []string, agent string) ([]string, int, error) {
	pending, err := e.store.Pending(ctx, ids)
	if err != nil {
		return nil, 0, err
	}
	steps := 0
	decided, err := e.sweep(ctx, ids, agent, func(r *store.Run) (bool, error) {
		decided, took, err := e.escalate(ctx, r, pending[r.ID])
		steps += took
		return decided, err
	})
	return decided, steps, err
}

// sweep calls f on each of the runs ids in a tree whose root runs agent
// (any, for ""), and returns the ids of those for which it reports true.
func (e *Engine) sweep(ctx context.Context, ids []string, agent string, f func(*store.Run) (bool, error)) ([]string, error) {
	var done []string
	for _, id := range ids {
		r, err := e.store.Run(ctx, id)
		if err != nil {
			return done, err
		}
		ok, err := e.ofAgent(ctx, r, agent)
		if err == nil && ok {
			ok, err = f(r)
		}
		if err != nil {
			return done, err
		}
		if ok {
			done = append(done, id)
		}
	}
	return done, nil
}

// ofAgent reports whether run r belongs to a tree whose root runs
// agent; any tree when agent is "".
func (e *Engine) ofAgent(ctx context.Context, r *store.Run, agent string) (bool, error) {
	if agent == "" {
		return true, nil
	}
	root := r
	if r.RootID != "" && r.RootID != r.ID {
		var err error
		if root, err = e.store.Run(ctx, r.RootID); err != nil {
			return false, err
		}
	}
	return root.Agent == agent, nil
}

// escalated returns the approvers the addApprovers steps that happened
// to call c of run r added (fired: the run's steps).
func (g *Graph) escalated(r *store.Run, c *store.Call, fired []*store.Escalation) spec.Approvers {
	var added spec.Approvers
	ladder := g.ladderOf(r, c.Tool)
	for _, x := range fired {
		if x.CallID != c.ID || x.Kind != spec.StepAddApprovers || x.Step > len(ladder) {
			continue
		}
		s := ladder[x.Step-1]
		added.Users = append(added.Users, s.AddApprovers.Users...)
		added.Groups = append(added.Groups, s.AddApprovers.Groups...)
	}
	return added
}

// widen adds the approvers added to the call's own policy of ps (the
// tool's, the agent's, an on-call schedule's), when it names approvers:
// whoever a step added may decide, besides those named. A supervisor's
// policy, and a rule's, are never widened (docs/escalation.md).
func widen(ps []policy, added spec.Approvers) []policy {
	if added.Empty() {
		return ps
	}
	out := slices.Clone(ps)
	for i, p := range out {
		if p.approvers.Empty() || p.from != "" {
			continue
		}
		p.approvers.Users = append(slices.Clone(p.approvers.Users), added.Users...)
		p.approvers.Groups = append(slices.Clone(p.approvers.Groups), added.Groups...)
		out[i] = p
	}
	return out
}

// escalateTree takes the due steps of the calls of tree t, and reports
// whether it took any (t is then out of date).
func (e *Engine) escalateTree(ctx context.Context, t *tree) (bool, error) {
	took := 0
	for _, r := range t.order {
		_, n, err := e.escalate(ctx, r, t.calls)
		if err != nil {
			return took > 0, err
		}
		took += n
	}
	return took > 0, nil
}

// firedIn returns the escalation steps that happened in tree t.
func (e *Engine) firedIn(ctx context.Context, t *tree) ([]*store.Escalation, error) {
	ids := make([]string, len(t.order))
	for i, r := range t.order {
		ids[i] = r.ID
	}
	byRun, err := e.store.Escalations(ctx, ids)
	if err != nil {
		return nil, err
	}
	var out []*store.Escalation
	for _, id := range ids {
		out = append(out, byRun[id]...)
	}
	return out, nil
}

// EscalationView is where a call waiting for approval stands on its
// escalation ladder: every step, with when it is due and, once it
// happened, when it did.
type EscalationView struct {
	Steps []EscalationStepView `json:"steps"`
}

// EscalationStepView is one step of a call's ladder.
type EscalationStepView struct {
	Step      int        `json:"step"` // from 1
	After     string     `json:"after"`
	Kind      string     `json:"kind"`                // remind, addApprovers or decide
	Approvers []string   `json:"approvers,omitempty"` // those addApprovers adds
	Decide    string     `json:"decide,omitempty"`    // decline or expire
	Reason    string     `json:"reason,omitempty"`
	Due       time.Time  `json:"due"`
	At        *time.Time `json:"at,omitempty"` // when it happened; nil: not yet
}

// Next is the first step of v that has not happened; nil when none is
// left.
func (v *EscalationView) Next() *EscalationStepView {
	for i := range v.Steps {
		if v.Steps[i].At == nil {
			return &v.Steps[i]
		}
	}
	return nil
}

// escalationOf is the ladder of pending call p of run r under g, with
// the steps fired of the run; nil when it has none.
func (g *Graph) escalationOf(r *store.Run, p *PendingView, since time.Time, fired []*store.Escalation) *EscalationView {
	ladder := g.ladderOf(r, p.Tool)
	if len(ladder) == 0 || p.Kind != store.KindApproval {
		return nil
	}
	v := &EscalationView{}
	for i, s := range ladder {
		sv := EscalationStepView{Step: i + 1, After: duration.Short(s.After), Kind: s.Kind, Decide: s.Decide,
			Reason: s.Reason, Due: since.Add(s.After).UTC().Truncate(time.Millisecond)}
		sv.Approvers = append(slices.Clone(s.AddApprovers.Users), prefixed("group:", s.AddApprovers.Groups)...)
		for _, x := range fired {
			if x.CallID == p.CallID && x.Step == i+1 {
				at := x.At
				sv.At = &at
			}
		}
		v.Steps = append(v.Steps, sv)
	}
	return v
}

// pendingEscalation sets p.Escalation, for pending call p of run r of
// tree t, and returns the steps that happened in r and p's call.
// Escalations that cannot be read leave p without one.
func (e *Engine) pendingEscalation(ctx context.Context, g *Graph, r *store.Run, t *tree, p *PendingView) ([]*store.Escalation, *store.Call) {
	c := &store.Call{ID: p.CallID, RunID: p.RunID, Tool: p.Tool}
	for _, x := range t.calls {
		if x.RunID == p.RunID && x.ID == p.CallID {
			c = x
		}
	}
	if p.Kind != store.KindApproval || !g.escalating() {
		return nil, c
	}
	byRun, err := e.store.Escalations(ctx, []string{r.ID})
	if err != nil {
		return nil, c
	}
	p.Escalation = g.escalationOf(r, p, c.CreatedAt, byRun[r.ID])
	return byRun[r.ID], c
}

// Escalation returns where call c of run r stands on its escalation
// ladder (the inbox, the API); nil when it has none.
func (e *Engine) Escalation(ctx context.Context, r *store.Run, c *store.Call) (*EscalationView, error) {
	if c.Status != store.CallPending || c.Kind != store.KindApproval {
		return nil, nil
	}
	g, err := e.graph(ctx, r.SpecHash)
	if err != nil || !g.escalating() {
		return nil, err
	}
	fired, err := e.store.Escalations(ctx, []string{r.ID})
	if err != nil {
		return nil, fmt.Errorf("escalation of call %s of run %s: %w", c.ID, r.ID, err)
	}
	p := &PendingView{CallID: c.ID, RunID: r.ID, Tool: c.Tool, Kind: c.Kind}
	return g.escalationOf(r, p, c.CreatedAt, fired[r.ID]), nil
}

// String says the step in words: "step 2 (after 1h) addApprovers
// group:sre-leads", "step 3 (after 4h) decide decline: no answer".
func (s EscalationStepView) String() string {
	t := fmt.Sprintf("step %d (after %s) %s", s.Step, s.After, s.Kind)
	switch {
	case len(s.Approvers) > 0:
		t += " " + strings.Join(s.Approvers, ", ")
	case s.Decide != "" && s.Reason != "":
		t += " " + s.Decide + ": " + s.Reason
	case s.Decide != "":
		t += " " + s.Decide
	}
	return t
}

// Phrase says in one line what happened on v and what is next: "step 1
// (after 15m) remind at 2026-12-05T09:15:00Z; next: step 2 (after 1h)
// addApprovers bob, due 2026-12-05T10:00:00Z".
func (v *EscalationView) Phrase() string {
	var parts []string
	for _, s := range v.Steps {
		if s.At != nil {
			parts = append(parts, s.String()+" at "+s.At.UTC().Format(time.RFC3339))
		}
	}
	if n := v.Next(); n != nil {
		parts = append(parts, "next: "+n.String()+", due "+n.Due.UTC().Format(time.RFC3339))
	}
	return strings.Join(parts, "; ")
}
