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
	// from names the supervisor whose requireToolApproval brings the
	// policy; "": the call's own.
	from string
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

// gating returns, nearest first, the supervisors above run r whose
// requireToolApproval holds every call of their subtree, r's included.
func (g *Graph) gating(r *store.Run) []*agentNode {
	var out []*agentNode
	for i := len(r.Path) - 2; i >= 0; i-- {
		if s, ok := g.agents[r.Path[i]]; ok && s.spec.RequireToolApproval {
			out = append(out, s)
		}
	}
	return out
}

// policiesOf returns the policies that a decision on a call of tool in
// run r must all satisfy: the call's own (policyOf), then, nearest
// first, that of each supervisor whose gate holds it (gating). The gate
// and the policy that requires it come together. Nil when r's agent is
// not in g.
func (g *Graph) policiesOf(r *store.Run, tool string) []policy {
	a, ok := g.agents[r.Agent]
	if !ok {
		return nil
	}
	ps := []policy{policyOf(a, tool)}
	for _, s := range g.gating(r) {
		ps = append(ps, policy{approvers: s.spec.Approvers, separate: s.spec.SeparateDuties, from: s.spec.Name})
	}
	return ps
}

// whose names the approvers of p in a refusal.
func (p policy) whose() string {
	if p.from == "" {
		return "approvers"
	}
	if strings.HasPrefix(p.from, "rule ") {
		return "approvers of policy " + p.from
	}
	return "approvers of supervisor " + p.from + ", whose requireToolApproval holds the call"
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

// Deciders says who may decide a waiting call under its run's spec
// snapshot (Engine.Deciders).
type Deciders struct {
	// Approvers each name who may decide: the call's own policy's (the
	// tool's, else its agent's), then each gating supervisor's, those
	// that name any. Whoever decides is named in every one. None: anyone
	// on the CLI; through a server, its approvers role.
	Approvers []spec.Approvers
	// NotBy is the run's starter when separateDuties applies: it may
	// decline the call, not approve, resume or retry it.
	NotBy string
	// RequireReason: the call's tool asks every decision for a reason
	// (requireReason).
	RequireReason bool
}

// Lists returns each of d.Approvers as users and group:NAME.
func (d Deciders) Lists() [][]string {
	out := make([][]string, len(d.Approvers))
	for i, a := range d.Approvers {
		out[i] = append(slices.Clone(a.Users), prefixed("group:", a.Groups)...)
		for _, o := range a.OnCall { // a schedule that gave nobody
			out[i] = append(out[i], o.String())
		}
	}
	return out
}

// Names reports whether every list of d names the user, by name or by
// one of groups (no list: false, as nobody is named).
func (d Deciders) Names(user string, groups []string) bool {
	for _, a := range d.Approvers {
		if !slices.Contains(a.Users, user) && !slices.ContainsFunc(groups, func(g string) bool { return slices.Contains(a.Groups, g) }) {
			return false
		}
	}
	return len(d.Approvers) > 0
}

// String says who may decide in words: "alice, group:sre", or "one of
// group:dba who is also one of alice, dave"; "" when no list names
// anyone.
func (d Deciders) String() string { return PhraseApprovers(d.Lists()) }

// PhraseApprovers says in words who is named in every one of lists
// (users and group:NAME): "alice, group:sre", or "one of group:dba who
// is also one of alice, dave".
func PhraseApprovers(lists [][]string) string {
	if len(lists) == 1 {
		return strings.Join(lists[0], ", ")
	}
	var s string
	for i, l := range lists {
		if i > 0 {
			s += " who is also "
		}
		s += "one of " + strings.Join(l, ", ")
	}
	return s
}

// prefixed returns names, each with p before it.
func prefixed(p string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = p + n
	}
	return out
}

// Deciders returns who may decide call c of run r under the run's spec
// snapshot: every policy that holds the call (the call's own and each
// gating supervisor's) must allow the one who decides.
func (e *Engine) Deciders(ctx context.Context, r *store.Run, c *store.Call) (Deciders, error) {
	g, err := e.graph(ctx, r.SpecHash)
	if err != nil {
		return Deciders{}, fmt.Errorf("deciders of call %s of run %s: %w", c.ID, r.ID, err)
	}
	var fired map[string][]*store.Escalation
	if g.escalating() {
		if fired, err = e.store.Escalations(ctx, []string{r.ID}); err != nil {
			return Deciders{}, fmt.Errorf("deciders of call %s of run %s: %w", c.ID, r.ID, err)
		}
	}
	d := decidersOf(g.callPolicies(r, c, fired[r.ID], spec.Approvers{}), r.StartedBy)
	if a, ok := g.agents[r.Agent]; ok {
		t := a.decl(c.Tool)
		d.RequireReason = t != nil && t.RequireReason
	}
	if g.upload != nil {
		d.NotBy = g.upload.By // an upload's author never approves its calls
	}
	return d, nil
}

// callPolicies returns the policies a decision on call c of run r must
// all satisfy: policiesOf with whom c recorded as on call (withOnCall);
// server, when none of them names approvers, standing in for the call's
// own (a server's approvers role); the call's own widened by the
// addApprovers steps among fired (widen); then the policy of the require
// rule c's gate recorded, which no step widens. Nil when r's agent is
// not in g.
func (g *Graph) callPolicies(r *store.Run, c *store.Call, fired []*store.Escalation, server spec.Approvers) []policy {
	ps := withOnCall(g.policiesOf(r, c.Tool), c)
	if ps == nil {
		return nil
	}
	if !server.Empty() && !namesAny(ps) {
		ps[0].approvers = server
	}
	ps = widen(ps, g.escalated(r, c, fired))
	return append(ps, rulePolicy(c)...) // engine/rules.go
}

// namesAny reports whether a policy of ps names approvers.
func namesAny(ps []policy) bool {
	return slices.ContainsFunc(ps, func(p policy) bool { return !p.approvers.Empty() })
}

// decidersOf says who may decide under policies ps in a run started by
// starter.
func decidersOf(ps []policy, starter string) Deciders {
	var d Deciders
	for _, p := range ps {
		if !p.approvers.Empty() {
			d.Approvers = append(d.Approvers, p.approvers)
		}
		if p.separate {
			d.NotBy = starter
		}
	}
	return d
}

// allows reports whether the approvers include the one d decides for,
// and why not.
func (e *Engine) allows(a spec.Approvers, d Decision, whose string) (bool, string) {
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
	return false, fmt.Sprintf("%s is not an approver (%s: %s)", by, whose, a)
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
// Every policy that holds the call (policiesOf) must allow it; a
// decline needs one of them (refusal).
func (e *Engine) check(g *Graph, r *store.Run, starter string, c *store.Call, d Decision) string {
	if why := e.onBehalf(g, d.By, d.OSUser, d.Auth); why != "" {
		return why
	}
	var server spec.Approvers
	if d.Auth != nil {
		server = d.Auth.Approvers
	}
	ps := g.callPolicies(r, c, d.escalated, server)
	if ps == nil || d.Action == store.Expire {
		return ""
	}
	if d.Auth != nil && server.Empty() && !namesAny(g.policiesOf(r, c.Tool)) {
		return fmt.Sprintf("nobody may decide calls of %s: the spec names no approvers for it, and the server's approvers role is empty", c.Tool)
	}
	if why := e.ruleDenial(g, r, starter, c, d); why != "" {
		return why
	}
	if why := e.refusal(ps, d); why != "" {
		return why
	}
	if d.Always && d.Action == store.Approve && !g.escalated(r, c, d.escalated).Empty() {
		// A grant reaches later calls, which no step widened: only
		// those their policies name may give one.
		if e.refusal(g.callPolicies(r, c, nil, server), d) != "" {
			return fmt.Sprintf("--always: %s may decide call %s only as its escalation added them, and a grant would reach calls of %s that did not escalate", d.By, c.ID, c.Tool)
		}
	}
	if why := shortcut(c, d); why != "" {
		return why
	}
	if up := g.upload; up != nil && (d.By == up.By || d.OSUser == up.By) && d.Action != store.Decline {
		// An uploaded spec's author never decides its calls (docs/server.md, "Uploaded specs").
		return fmt.Sprintf("%s uploaded the spec of run %s and may not approve its calls, in person or --as another", up.By, r.RootID)
	}
	if starter == "" || d.By != starter && d.OSUser != starter || d.Action == store.Decline {
		return ""
	}
	for _, p := range ps {
		if p.separate {
			// The starter's own account may not approve for someone else either.
			of := ""
			if strings.HasPrefix(p.from, "rule ") {
				of = " of policy " + p.from
			} else if p.from != "" {
				of = " of supervisor " + p.from
			}
			return fmt.Sprintf("%s started run %s and may not approve its calls, in person or --as another (separateDuties%s)", starter, r.RootID, of)
		}
	}
	return ""
}

// refusal says why policies ps do not let d decide, or "". Every one
// must allow it; a decline, any one that names approvers: declining runs
// nothing, as one decline ends a four-eyes call.
func (e *Engine) refusal(ps []policy, d Decision) string {
	first := ""
	for _, p := range ps {
		ok, why := e.allows(p.approvers, d, p.whose())
		switch {
		case ok && d.Action == store.Decline && !p.approvers.Empty():
			return ""
		case !ok && first == "":
			first = why
		}
	}
	return first
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
