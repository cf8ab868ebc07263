package server

import (
	"context"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/spec"
)

// Role names, as whoami lists them.
const (
	RoleReader   = "reader"
	RoleRunner   = "runner"
	RoleAuthor   = "author"
	RoleApprover = "approver"
	RoleDelegate = "delegate"
)

// members is a role's list: users, and groups (group:NAME).
type members struct {
	users, groups []string
}

func membersOf(list []string) members {
	var m members
	for _, n := range list {
		if g, ok := strings.CutPrefix(n, "group:"); ok {
			m.groups = append(m.groups, g)
		} else {
			m.users = append(m.users, n)
		}
	}
	return m
}

// has reports whether p is a member: by name, or by one of its groups.
func (m members) has(p *Principal) bool {
	if slices.Contains(m.users, p.Name) {
		return true
	}
	return slices.ContainsFunc(p.Groups, func(g string) bool { return slices.Contains(m.groups, g) })
}

// roles are the configuration's roles.
type roles struct {
	readers, runners, authors, approvers, delegates members
}

func rolesOf(c *Config) roles {
	return roles{
		readers:   membersOf(c.Readers),
		runners:   membersOf(c.Runners),
		authors:   membersOf(c.Authors),
		approvers: membersOf(c.Approvers),
		delegates: membersOf(c.Delegates),
	}
}

// of returns the roles p holds. Any role implies reading; authors may
// also run.
func (rs roles) of(p *Principal) []string {
	var out []string
	for _, r := range []struct {
		name string
		m    members
	}{{RoleReader, rs.readers}, {RoleRunner, rs.runners}, {RoleAuthor, rs.authors}, {RoleApprover, rs.approvers}, {RoleDelegate, rs.delegates}} {
		if r.m.has(p) {
			out = append(out, r.name)
		}
	}
	if len(out) > 0 && !slices.Contains(out, RoleReader) {
		out = append([]string{RoleReader}, out...)
	}
	if slices.Contains(out, RoleAuthor) && !slices.Contains(out, RoleRunner) {
		out = append(out, RoleRunner)
	}
	return out
}

// authority is what the engine needs of p to apply the approver policy.
func (rs roles) authority(p *Principal) *engine.Authority {
	return &engine.Authority{
		Groups:    slices.Clone(p.Groups),
		Approvers: spec.Approvers{Users: rs.approvers.users, Groups: rs.approvers.groups},
		Delegate:  rs.delegates.has(p),
		Via:       p.Via,
	}
}

// authority is what the engine needs of p for a request: the roles',
// and the groups of those p may act for, from the server's tokens.
func (s *Server) authority(ctx context.Context, p *Principal) *engine.Authority {
	a := s.roles.authority(p)
	ctx = context.WithoutCancel(ctx) // the engine may ask after the client has gone
	a.GroupsOf = func(name string) ([]string, bool) { return s.tokenGroups(ctx, name) }
	return a
}

// tokenGroups is what the server knows of a user's groups: those of the
// user's live tokens. ok is false only when no token ever named the user
// (the server does not know the name); a store that cannot say counts
// as knowing no groups. A delegate deciding as a token user is judged by
// the groups the user's tokens were given, never by an OS account of the
// same name.
func (s *Server) tokenGroups(ctx context.Context, name string) ([]string, bool) {
	toks, err := s.store.Tokens(ctx)
	if err != nil {
		s.log.Warn("groups of a user: tokens unreadable", "user", name, "err", err.Error())
		return nil, true
	}
	var gs []string
	known := false
	now := s.now()
	for _, t := range toks {
		if t.User != name {
			continue
		}
		known = true
		if !t.RevokedAt.IsZero() || !now.Before(t.ExpiresAt) {
			continue
		}
		for _, g := range t.Groups {
			if !slices.Contains(gs, g) {
				gs = append(gs, g)
			}
		}
	}
	return gs, known
}
