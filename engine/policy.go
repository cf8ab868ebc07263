package engine

import (
	"context"
	"fmt"
	"os/user"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
)

// policy is who may decide one call, from the run's spec snapshot.
type policy struct {
	approvers spec.Approvers // empty: anyone
	separate  bool           // the run's starter may not approve
}

// policyOf returns the policy for a call of an agent: the tool's
// approvers, else the agent's; separate duties if either asks.
func policyOf(a *agentNode, tool string) policy {
	p := policy{approvers: a.spec.Approvers, separate: a.spec.SeparateDuties}
	if t := a.decl(tool); t != nil {
		if !t.Approvers.Empty() {
			p.approvers = t.Approvers
		}
		p.separate = p.separate || t.SeparateDuties
	}
	return p
}

// groupsOf returns the names of the OS groups user belongs to, read at
// decision time.
func groupsOf(name string) ([]string, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range ids {
		if g, err := user.LookupGroupId(id); err == nil {
			out = append(out, g.Name)
		}
	}
	return out, nil
}

// Authority is what a server (agentctl serve) knows of the one deciding,
// beyond a name: the engine applies the approver policy with it. Nil on
// the CLI, where the OS user and the OS groups say it all.
type Authority struct {
	// Groups are the authenticated principal's (OSUser's) groups, such as
	// a token's: authoritative for a decision in its own name, for which
	// the OS groups of a same-named account are not looked up.
	Groups []string
	// GroupsOf, when set, gives the groups of one decided for (--as) as
	// the server knows them (its tokens'); ok false: the server does not
	// know the name, and its OS groups count.
	GroupsOf func(name string) (groups []string, ok bool)
	// Approvers may decide the calls whose spec names no approvers (the
	// server's approvers role); empty, nobody may.
	Approvers spec.Approvers
	// Delegate: the principal may decide on behalf of others (the
	// server's delegates role).
	Delegate bool
	// Via is how the server identified the principal (socket, token or
	// proxy); it is recorded with each decision.
	Via string
}

// via is how the decider was identified, for the audit record.
func (a *Authority) via() string {
	if a == nil {
		return ""
	}
	return a.Via
}

// Approvers returns who may decide call c of run r under the run's spec
// snapshot: the tool's approvers, else its agent's; empty when the spec
// names none (anyone on the CLI; a server's approvers role).
func (e *Engine) Approvers(ctx context.Context, r *store.Run, c *store.Call) (spec.Approvers, error) {
	g, err := e.graph(ctx, r.SpecHash)
	if err != nil {
		return spec.Approvers{}, fmt.Errorf("approvers of call %s of run %s: %w", c.ID, r.ID, err)
	}
	a, ok := g.agents[r.Agent]
	if !ok {
		return spec.Approvers{}, nil
	}
	return policyOf(a, c.Tool).approvers, nil
}

// allows reports whether the approvers include the one d decides for,
// and why not.
func (e *Engine) allows(a spec.Approvers, d Decision) (bool, string) {
	by := d.By
	if a.Empty() || slices.Contains(a.Users, by) {
		return true, ""
	}
	if len(a.Groups) > 0 {
		groups, err := e.groupsFor(d)
		if err == nil {
			for _, g := range a.Groups {
				if slices.Contains(groups, g) {
					return true, ""
				}
			}
		}
	}
	return false, fmt.Sprintf("%s is not an approver (approvers: %s)", by, a)
}

// groupsFor returns the groups of the one d decides for: a server's
// principal's own, the server's word for another it knows, else the
// OS's.
func (e *Engine) groupsFor(d Decision) ([]string, error) {
	if d.Auth != nil && d.By == d.OSUser {
		return d.Auth.Groups, nil
	}
	if d.Auth != nil && d.Auth.GroupsOf != nil {
		if gs, ok := d.Auth.GroupsOf(d.By); ok {
			return gs, nil
		}
	}
	return e.groups(d.By)
}

// check applies the approver policy to a decision on call c of run r
// (root started by starter): it returns why it is forbidden, or "".
func (e *Engine) check(g *Graph, r *store.Run, starter string, c *store.Call, d Decision) string {
	if why := e.onBehalf(g, d.By, d.OSUser, d.Auth); why != "" {
		return why
	}
	a, ok := g.agents[r.Agent]
	if !ok || d.Action == store.Expire {
		return ""
	}
	p := policyOf(a, c.Tool)
	if p.approvers.Empty() && d.Auth != nil {
		// On a server, a spec that names no approvers leaves the call to
		// the server's approvers role.
		if d.Auth.Approvers.Empty() {
			return fmt.Sprintf("nobody may decide calls of %s: the spec names no approvers for it, and the server's approvers role is empty", c.Tool)
		}
		p.approvers = d.Auth.Approvers
	}
	if ok, why := e.allows(p.approvers, d); !ok {
		return why
	}
	if why := shortcut(c, d); why != "" {
		return why
	}
	if p.separate && starter != "" && (d.By == starter || d.OSUser == starter) && d.Action != store.Decline {
		// The starter's own account may not approve for someone else either.
		return fmt.Sprintf("%s started run %s and may not approve its calls, in person or --as another (separateDuties)", starter, r.RootID)
	}
	return ""
}

// onBehalf says why osUser may not act for by ("" when by is osUser,
// or osUser is a delegate of the spec, the installation or the server).
func (e *Engine) onBehalf(g *Graph, by, osUser string, auth *Authority) string {
	if by == osUser {
		return ""
	}
	delegates := append(slices.Clone(g.spec.Policy.Delegates), e.delegates...)
	if slices.Contains(delegates, osUser) || auth != nil && auth.Delegate {
		return ""
	}
	if auth != nil {
		return fmt.Sprintf("%s may not decide on behalf of %s: only delegates may (the spec's policy.delegates: %s; the server's delegates role)",
			osUser, by, orNone(g.spec.Policy.Delegates))
	}
	return fmt.Sprintf("OS user %s may not decide on behalf of %s: only delegates may (the spec's policy.delegates: %s; the installation's: %s)",
		osUser, by, orNone(g.spec.Policy.Delegates), orNone(e.delegates))
}

// checkBy refuses a name given to act on behalf of (--as) that is not
// a name of the engine's profile: a space, a colon or a control
// character in it would forge or garble the audit trail's lines, a
// look-alike letter make it pass for another user.
func (e *Engine) checkBy(by string) error {
	if by == "" {
		return nil
	}
	if err := e.names.Check(by); err != nil {
		return usagef("--as %q: %v: nothing was recorded", by, err)
	}
	return nil
}

// shortcut says why an approval would cut a four-eyes call short: a
// grant (--always) would let the tool's later calls run on one approval,
// and edited arguments (--args) would run what only the last approver
// saw.
func shortcut(c *store.Call, d Decision) string {
	if c.Needed < 2 || d.Action != store.Approve {
		return ""
	}
	switch {
	case d.Always:
		return fmt.Sprintf("--always cannot stand in for the %d approvals each call of %s needs", c.Needed, c.Tool)
	case len(d.Args) > 0:
		return fmt.Sprintf("--args cannot change call %s: it needs %d approvals of the same arguments; decline it, giving the change as the reason", c.ID, c.Needed)
	}
	return ""
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// refuse records refused attempts on calls of run r, with their
// events, and returns the error for them.
func (e *Engine) refuse(ctx context.Context, r *store.Run, calls []*store.Call, d Decision, why string) error {
	runID := r.ID
	var ds []*store.Decision
	var evs []store.Event
	for _, c := range calls {
		rec := &store.Decision{RunID: runID, CallID: c.ID, Action: store.Refused, By: d.By, OSUser: d.OSUser, Via: d.Auth.via(),
			Reason: string(d.Action) + " refused: " + why}
		ds, evs = append(ds, rec), append(evs, decisionEvent(r, c, rec))
	}
	if _, err := e.store.Decide(context.WithoutCancel(ctx), ds, store.Lease{}, evs...); err != nil {
		return fmt.Errorf("record a refused %s: %w", d.Action, err)
	}
	e.emit(evs)
	callID := ""
	if len(calls) == 1 {
		callID = calls[0].ID
	}
	return &store.ForbiddenError{RunID: runID, CallID: callID, Reason: why}
}
