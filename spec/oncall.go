package spec

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/oncall"
	"github.com/agentctl/agentctl/spec/tmpl"
)

// On-call services.
const (
	ServicePagerDuty = "pagerduty"
	ServiceOpsgenie  = "opsgenie"
)

// OnCall is an approver source: whoever is on call on one schedule when
// a call starts waiting (approvers: [{oncall: ...}]).
type OnCall struct {
	Pos Pos
	// Service is ServicePagerDuty or ServiceOpsgenie.
	Service string
	// Schedule is PagerDuty's schedule ID, or Opsgenie's schedule name.
	Schedule string
	// Level keeps only PagerDuty's on-calls at this escalation level; 0:
	// every level.
	Level int
	// Secret is the token (PagerDuty) or apiKey (Opsgenie), over env.
	Secret *tmpl.String
	// APIURL is the API's URL; "": the service's own.
	APIURL string
	// Users maps a schedule user (email, id or name) to an agentctl user.
	Users map[string]string
	// Fallback may decide when the schedule cannot be read; empty: nobody
	// from this source.
	Fallback Approvers
}

// Key names the source on a call's record: "pagerduty/PABC123",
// "pagerduty/PABC123@1" with an escalation level, "opsgenie/ops-primary".
func (o *OnCall) Key() string {
	k := o.Service + "/" + o.Schedule
	if o.Level > 0 {
		k += "@" + strconv.Itoa(o.Level)
	}
	return k
}

// URL is the API's URL the schedule is read from: APIURL, else the
// service's own.
func (o *OnCall) URL() string {
	switch {
	case o.APIURL != "":
		return o.APIURL
	case o.Service == ServiceOpsgenie:
		return oncall.OpsgenieURL
	}
	return oncall.PagerDutyURL
}

// String is the source as approvers lists show it: oncall:KEY.
func (o *OnCall) String() string { return "oncall:" + o.Key() }

// onCall decodes one {oncall: ...} item of an approvers list at path;
// the schema checks its shape.
func (d *decoder) onCall(f *file, n *yaml.Node, path string) *OnCall {
	v := field(n, "oncall")
	if v == nil || v.Kind != yaml.MappingNode {
		return nil // the schema reports it
	}
	o := &OnCall{Pos: f.pos(n)}
	pd, og := field(v, "pagerduty"), field(v, "opsgenie")
	secret := "token"
	switch {
	case (pd == nil) == (og == nil):
		d.errs.add(f.pos(v), "%s.oncall: name one schedule, pagerduty or opsgenie", path)
		return nil
	case pd != nil:
		o.Service, o.Schedule = ServicePagerDuty, str(field(pd, "schedule"))
		o.Level, _ = strconv.Atoi(str(field(pd, "escalationLevel")))
	default:
		o.Service, o.Schedule, pd, secret = ServiceOpsgenie, str(field(og, "schedule")), og, "apiKey"
	}
	at := path + ".oncall." + o.Service
	if sn := scalar(field(pd, secret)); sn != nil {
		o.Secret = d.template(f, sn, modelVars)
		if o.Secret != nil && len(o.Secret.EnvNames()) == 0 && !d.trusted {
			d.errs.add(f.pos(sn), "%s.%s: a secret is read from the environment: write ${{ env.NAME }}", at, secret)
		}
	}
	if un := scalar(field(pd, "apiURL")); un != nil {
		o.APIURL = un.Value
		if u, err := url.Parse(o.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			d.errs.add(f.pos(un), "%s.apiURL: %q is not an http(s) URL", at, o.APIURL)
		}
	}
	for k, uv := range pairs(field(v, "users")) {
		if un := scalar(uv); un != nil && d.principal(f, un, path+".oncall.users."+k.Value, un.Value, false) {
			if o.Users == nil {
				o.Users = map[string]string{}
			}
			o.Users[k.Value] = un.Value
		}
	}
	o.Fallback = d.approvers(f, field(v, "fallback"), path+".oncall.fallback")
	return o
}

// onCallEnvReads lists the secrets the on-call sources of the spec's
// approvers read.
func (s *Spec) onCallEnvReads() []EnvRead {
	var out []EnvRead
	add := func(what string, a Approvers) {
		for _, o := range a.OnCall {
			if o.Secret != nil {
				for _, n := range o.Secret.EnvNames() {
					out = append(out, EnvRead{Name: n, Pos: o.Pos, What: fmt.Sprintf("%s (approvers %s)", what, o)})
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Tools)) {
		add("tool "+name, s.Tools[name].Approvers)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Agents)) {
		add("agent "+name, s.Agents[name].Approvers)
	}
	return out
}

// OnCalls returns every on-call source the spec's approvers name.
func (s *Spec) OnCalls() []*OnCall {
	var out []*OnCall
	for _, name := range slices.Sorted(maps.Keys(s.Tools)) {
		out = append(out, s.Tools[name].Approvers.OnCall...)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Agents)) {
		out = append(out, s.Agents[name].Approvers.OnCall...)
	}
	return out
}

// noOnCall refuses the on-call sources of approvers a declared at path
// (a rule's approvers, an escalation step's addApprovers): a schedule is
// read only for a tool's or an agent's approvers, so one named elsewhere
// would add nobody, and a rule naming only one no restriction.
func (d *decoder) noOnCall(a Approvers, path string) {
	if d.trusted {
		return
	}
	for _, o := range a.OnCall {
		d.errs.add(o.Pos, "%s: %s: an oncall source goes in a tool's or an agent's approvers; nothing reads its schedule here: name users and group:NAME", path, o)
	}
}
