package server

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/spec"
)

// known are the names the server's roles and configured specs give: an
// uploaded spec may narrow who decides to some of them, never name
// another.
type known struct {
	users, groups, delegates map[string]bool
	names                    map[string]string // configured agents and tools, by fold
}

// knownNames gathers the approvers and delegates of the server's roles
// and configured specs, and the names of the configured agents and
// tools.
func (s *Server) knownNames() known {
	k := known{users: map[string]bool{}, groups: map[string]bool{}, delegates: map[string]bool{}, names: map[string]string{}}
	addApprovers := func(a spec.Approvers) {
		for _, u := range a.Users {
			k.users[u] = true
		}
		for _, g := range a.Groups {
			k.groups[g] = true
		}
	}
	addApprovers(spec.Approvers{Users: s.roles.approvers.users, Groups: s.roles.approvers.groups})
	for _, d := range s.roles.delegates.users {
		k.delegates[d] = true
	}
	g := s.specs.Graph()
	if g == nil {
		return k
	}
	sp := g.Spec()
	for _, d := range sp.Policy.Delegates {
		k.delegates[d] = true
	}
	for name, a := range sp.Agents {
		addApprovers(a.Approvers)
		k.names[fold(name)] = "agent " + name
	}
	for name, t := range sp.Tools {
		addApprovers(t.Approvers)
		k.names[fold(name)] = "tool " + name
	}
	return k
}

// fold is a name as a reader might take it: case, dashes, underscores
// and dots ignored.
func fold(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' {
			return -1
		}
		return r
	}, strings.ToLower(name))
}

// grantProblems reports what an uploaded spec would grant: an approver
// or a delegate the server does not already have, or an agent or tool
// named like a configured one (its approval items would read alike).
func (s *Server) grantProblems(sp *spec.Spec) spec.Errors {
	k := s.knownNames()
	var errs spec.Errors
	add := func(pos spec.Pos, format string, args ...any) {
		errs = append(errs, &spec.Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
	}
	approvers := func(pos spec.Pos, what string, a spec.Approvers) {
		for _, u := range a.Users {
			if !k.users[u] {
				add(pos, "%s: approver %s is not one the server's approvers role or a configured spec names: an upload may only narrow who decides", what, u)
			}
		}
		for _, g := range a.Groups {
			if !k.groups[g] {
				add(pos, "%s: approver group:%s is not one the server's approvers role or a configured spec names: an upload may only narrow who decides", what, g)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(sp.Agents)) {
		a := sp.Agents[name]
		approvers(a.Pos, "agent "+name, a.Approvers)
		if c, ok := k.names[fold(name)]; ok {
			add(a.Pos, "agent %s: named like the configured %s: an upload names its agents and tools apart from the server's", name, c)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(sp.Tools)) {
		t := sp.Tools[name]
		approvers(t.Pos, "tool "+name, t.Approvers)
		if c, ok := k.names[fold(name)]; ok {
			add(t.Pos, "tool %s: named like the configured %s: an upload names its agents and tools apart from the server's", name, c)
		}
	}
	for _, o := range sp.OnCalls() {
		// Only those users: maps count in an upload (engine.onCallUsers):
		// they and the fallback are names the server knows.
		approvers(o.Pos, "approvers "+o.String()+" fallback", o.Fallback)
		approvers(o.Pos, "approvers "+o.String()+" users", spec.Approvers{Users: slices.Sorted(maps.Values(o.Users))})
	}
	for _, ladder := range sp.Ladders() {
		for i, st := range ladder {
			// A step's addApprovers widen who decides: only names the
			// server knows, as any approver of an upload.
			approvers(st.Pos, fmt.Sprintf("escalation step %d addApprovers", i+1), st.AddApprovers)
		}
	}
	for i, d := range sp.Policy.Delegates {
		if !k.delegates[d] {
			add(sp.Policy.DelegatePos[i], "policy.delegates: %s is not a delegate of the server's delegates role or a configured spec: an upload may not make one", d)
		}
	}
	return errs
}
