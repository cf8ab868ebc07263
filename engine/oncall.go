package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	schedules "github.com/agentctl/agentctl/oncall"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/spec/tmpl"
	"github.com/agentctl/agentctl/toolkits"
	secrets "github.com/agentctl/agentctl/toolkits/redact"
)

// onCallTimeout bounds how long reading one schedule may take: a call
// starts waiting either way, with the fallback when it is too slow.
const onCallTimeout = 5 * time.Second

// onCallSecrets names the environment variables the spec's on-call
// sources read (their token or apiKey): cut like a tool's secrets.
func onCallSecrets(s *spec.Spec) []string {
	var out []string
	for _, o := range s.OnCalls() {
		if o.Secret != nil {
			out = append(out, o.Secret.EnvNames()...)
		}
	}
	return out
}

// resolveOnCall reads, once, who is on call on each schedule the
// policies holding call c name, as c starts waiting, and records it on
// c's gate: who may decide is then fixed on the call (withOnCall).
func (rn *runner) resolveOnCall(ctx context.Context, c *store.Call) {
	var seen []string
	for _, p := range rn.g.policiesOf(rn.r, c.Tool) {
		for _, o := range p.approvers.OnCall {
			if slices.Contains(seen, o.Key()) {
				continue
			}
			seen = append(seen, o.Key())
			c.Gate.OnCall = append(c.Gate.OnCall, rn.e.resolveOnCall(ctx, o, rn.g.upload != nil))
		}
	}
}

// resolveOnCall reads one schedule, mapping who is on call to agentctl
// users; a schedule that cannot be read, or names nobody who can be
// mapped, records why and the fallback. Secrets are cut from the error.
// For an uploaded spec (mappedOnly), only those users: maps count: an
// upload only narrows who decides.
func (e *Engine) resolveOnCall(ctx context.Context, o *spec.OnCall, mappedOnly bool) store.OnCall {
	rec := store.OnCall{Source: o.Key(), At: e.now().UTC().Truncate(time.Millisecond)}
	ctx, cancel := context.WithTimeout(ctx, onCallTimeout)
	defer cancel()
	people, err := onCallPeople(ctx, o)
	if err == nil {
		rec.People, rec.Users, err = e.onCallUsers(o, people, mappedOnly)
	}
	if err != nil {
		names := o.Secret.EnvNames()
		rec.Error = secrets.New(names, toolkits.EnvOf(names)).Cut(err.Error())
		rec.Fallback = append(slices.Clone(o.Fallback.Users), prefixed("group:", o.Fallback.Groups)...)
	}
	return rec
}

// onCallPeople asks the schedule's service who is on call now.
func onCallPeople(ctx context.Context, o *spec.OnCall) ([]schedules.Person, error) {
	secret, err := onCallSecret(o)
	if err != nil {
		return nil, err
	}
	switch o.Service {
	case spec.ServicePagerDuty:
		return schedules.PagerDuty{APIURL: o.APIURL, Token: secret, Schedule: o.Schedule, Level: o.Level}.OnCall(ctx, schedules.Client())
	case spec.ServiceOpsgenie:
		return schedules.Opsgenie{APIURL: o.APIURL, Key: secret, Schedule: o.Schedule}.OnCall(ctx, schedules.Client())
	}
	return nil, fmt.Errorf("unknown on-call service %q", o.Service)
}

// onCallSecret reads the source's token or apiKey from the environment,
// now; it is never kept.
func onCallSecret(o *spec.OnCall) (string, error) {
	if o.Secret == nil {
		return "", errors.New("no token")
	}
	names := o.Secret.EnvNames()
	s, err := o.Secret.Render(tmpl.Env{"env": toolkits.EnvOf(names)})
	switch {
	case err != nil:
		return "", fmt.Errorf("token %s: %w", o.Secret.Source(), err)
	case s == "":
		return "", fmt.Errorf("token %s is empty: set %s", o.Secret.Source(), strings.Join(names, " and "))
	}
	return s, nil
}

// onCallUsers maps those on call to agentctl users through the source's
// users: map (by email, id or name), else by email, else id; with
// mappedOnly, through the map alone. A name that is not a valid user
// name is left out; none left is an error.
func (e *Engine) onCallUsers(o *spec.OnCall, people []schedules.Person, mappedOnly bool) (named, users []string, err error) {
	var bad []string
	for _, p := range people {
		keys := p.Keys()
		named = append(named, keys[0])
		user, mapped := keys[0], false
		if p.Email == "" && p.ID != "" {
			user = p.ID
		}
		for _, k := range keys {
			if u, ok := o.Users[k]; ok {
				user, mapped = u, true
				break
			}
		}
		if mappedOnly && !mapped {
			bad = append(bad, keys[0]+" (not in users:, as an uploaded spec needs)")
		} else if e.names.Check(user) != nil {
			bad = append(bad, user)
		} else if !slices.Contains(users, user) {
			users = append(users, user)
		}
	}
	if len(users) == 0 {
		return named, nil, fmt.Errorf("none of those on call (%s) maps to an agentctl user: map them with users:", strings.Join(bad, ", "))
	}
	return named, users, nil
}

// withOnCall returns policies ps with each on-call source replaced by
// whom call c recorded for it: the users on call, else the fallback.
// A source c recorded nothing for, or that gave nobody, adds nobody;
// a policy left with no one keeps those sources, so that it is not
// taken for "anyone" (and says which gave nobody).
func withOnCall(ps []policy, c *store.Call) []policy {
	for i, p := range ps {
		if len(p.approvers.OnCall) == 0 {
			continue
		}
		a := spec.Approvers{Users: slices.Clone(p.approvers.Users), Groups: slices.Clone(p.approvers.Groups)}
		for _, o := range p.approvers.OnCall {
			j := slices.IndexFunc(c.Gate.OnCall, func(r store.OnCall) bool { return r.Source == o.Key() })
			if j < 0 {
				a.OnCall = append(a.OnCall, o)
				continue
			}
			r := c.Gate.OnCall[j]
			who := append(slices.Clone(r.Users), r.Fallback...)
			if len(who) == 0 {
				a.OnCall = append(a.OnCall, o)
			}
			for _, w := range who {
				if g, ok := strings.CutPrefix(w, "group:"); ok {
					a.Groups = appendNew(a.Groups, g)
				} else {
					a.Users = appendNew(a.Users, w)
				}
			}
		}
		if len(a.Users) > 0 || len(a.Groups) > 0 {
			a.OnCall = nil
		}
		ps[i].approvers = a
	}
	return ps
}

func appendNew(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
