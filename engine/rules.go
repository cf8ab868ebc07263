package engine

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
)

// Policy rules (policy.rules, policy.freezes) decide a call at the gate,
// before its tool does: deny (the call is declined at once, nobody may
// approve it), require (it waits, under stricter approvers), allow (no
// human, for the tool's own requireApproval and its agent's
// requireToolApproval only: a supervisor's requireToolApproval, the
// run's --require-approval and an uploaded spec's every-call rule still
// hold). A deny rule is checked again at each approval, at that time: a
// freeze that starts while a call waits refuses its approval. The
// decision is recorded in the call's gate (store.Gate.Rule), which
// Deciders and check read: every channel decides through them.

// RuleCall is a call as rules see it (spec.RuleCall).
type RuleCall = spec.RuleCall

// ruleCall is call tool (of declaration decl) with args in run r, at
// time at, as rules see it. The run's labels are in its state.
func ruleCall(r *store.Run, starter, tool, decl string, args map[string]any, at time.Time) spec.RuleCall {
	return spec.RuleCall{Tool: tool, Decl: decl, Agent: r.Agent, Path: r.Path, Input: args,
		Starter: starter, At: at, Labels: labelsOf(r)}
}

// Record is what rule match m decided, as a call's gate keeps it.
func Record(m spec.RuleMatch, at time.Time) store.RuleRecord {
	r := m.Rule
	rec := store.RuleRecord{Name: r.Name, Effect: string(r.Effect), Reason: r.Reason, Approvals: r.Approvals,
		SeparateDuties: r.SeparateDuties, At: at.UTC().Truncate(time.Millisecond)}
	if !r.Approvers.Empty() {
		rec.Approvers = append(slices.Clone(r.Approvers.Users), prefixed("group:", r.Approvers.Groups)...)
	}
	if m.Err != nil {
		rec.Error = m.Err.Error()
	}
	return rec
}

// matchRules evaluates the spec's rules for a call of tool t with args
// in the runner's run, now: the deciding rule (nil: none) and the
// matching shadow rules.
func (rn *runner) matchRules(c *store.Call, t *toolNode, args map[string]any) (*store.RuleRecord, []store.RuleRecord) {
	pol := &rn.g.spec.Policy
	if len(pol.Rules) == 0 && len(pol.Freezes) == 0 {
		return nil, nil
	}
	at := rn.e.now()
	m, shadows := pol.Match(ruleCall(rn.r, rn.r.StartedBy, c.Tool, t.decl.Name, args, at))
	ro, _ := rn.e.observer.(RuleObserver)
	var out []store.RuleRecord
	for _, s := range shadows {
		out = append(out, Record(s, at))
		if ro != nil {
			ro.Rule(s.Rule.Name, string(s.Rule.Effect), true)
		}
	}
	if m == nil {
		return nil, out
	}
	if ro != nil {
		ro.Rule(m.Rule.Name, string(m.Rule.Effect), false)
	}
	rec := Record(*m, at)
	return &rec, out
}

// RuleObserver, when the engine's Observer implements it, counts what
// policy rules decide at the gate: each call a rule denied, required or
// allowed, and each a shadow rule matched (shadow true).
type RuleObserver interface {
	Rule(name, effect string, shadow bool)
}

// deny declines call c at the gate as rule rec says: the model is told
// why, and the run goes on.
func deny(c *store.Call, rec *store.RuleRecord) {
	c.Status = store.CallDeclined
	c.Gate = store.Gate{Verdict: store.GateDenied, Reasons: []store.Reason{{Kind: store.ReasonRule, Detail: rec.Name}}, Rule: rec}
	c.Result = fmt.Sprintf("The tool call was denied by the policy rule %s and was not executed; nobody may approve it. Reason: %s. "+
		"Do not retry the same call: tell the user, or do something else.", rec.Name, cmp.Or(rec.Reason, "none given"))
}

// rulePolicy is the policy a require rule recorded on call c adds to
// those its decision must satisfy, or none.
func rulePolicy(c *store.Call) []policy {
	rec := c.Gate.Rule
	if rec == nil || rec.Effect != string(spec.EffectRequire) || len(rec.Approvers) == 0 && !rec.SeparateDuties {
		return nil
	}
	var a spec.Approvers
	for _, n := range rec.Approvers {
		if g, ok := strings.CutPrefix(n, "group:"); ok {
			a.Groups = append(a.Groups, g)
		} else {
			a.Users = append(a.Users, n)
		}
	}
	return []policy{{approvers: a, separate: rec.SeparateDuties, from: "rule " + rec.Name}}
}

// ruleDenial says why a decision that would run call c of run r is
// refused by a deny rule now ("" when none applies): a freeze that began
// while the call waited holds it until the freeze ends. An approval's
// edited arguments are matched too: a require rule they match, and the
// call's gate did not record, refuses it. A decline, and a resolve
// (which records what a human found; nothing runs), are always allowed.
func (e *Engine) ruleDenial(g *Graph, r *store.Run, starter string, c *store.Call, d Decision) string {
	pol := &g.spec.Policy
	if len(pol.Rules) == 0 && len(pol.Freezes) == 0 || d.Action == store.Decline || d.Action == store.Expire || d.Action == store.Resolve {
		return ""
	}
	if rec := c.Gate.Rule; rec != nil && rec.Effect == string(spec.EffectDeny) {
		return fmt.Sprintf("call %s was %s: nobody may approve it", c.ID, rec.Phrase())
	}
	a, ok := g.agents[r.Agent]
	if !ok {
		return ""
	}
	decl := c.Tool
	if t := a.decl(c.Tool); t != nil {
		decl = t.Name
	}
	// An approval's edited arguments (--args) are what would run: the
	// rules see them, not those the gate saw.
	raw, edited := c.Args, d.Action == store.Approve && len(d.Args) > 0
	if edited {
		raw = d.Args
	}
	var args map[string]any
	_ = json.Unmarshal(raw, &args)
	at := e.now()
	m, _ := pol.Match(ruleCall(r, starter, c.Tool, decl, args, at))
	switch {
	case m == nil:
		return ""
	case m.Rule.Effect == spec.EffectDeny:
		return fmt.Sprintf("nobody may approve call %s now: %s (decline it, or wait until the rule no longer holds)", c.ID, Record(*m, at).Phrase())
	case edited && m.Rule.Effect == spec.EffectRequire && (c.Gate.Rule == nil || c.Gate.Rule.Name != m.Rule.Name):
		return fmt.Sprintf("--args would bring call %s under %s, which its approval did not ask for: decline it, giving the change as the reason",
			c.ID, Record(*m, at).Phrase())
	}
	return ""
}

// ruleApprovals is the count of approvals a rule record asks for (0:
// none, or no rule).
func ruleApprovals(rec *store.RuleRecord) int {
	if rec == nil {
		return 0
	}
	return rec.Approvals
}

// RuleEvent reports what a policy rule decided for a call (rule-matched),
// or would have decided (rule-shadow).
type RuleEvent struct {
	CallID string           `json:"callId"`
	Rule   store.RuleRecord `json:"rule"`
	Tool   string           `json:"tool"`
}

// ruleEvents are the events of the rules recorded on call c's gate.
func ruleEvents(r *store.Run, c *store.Call) []store.Event {
	var evs []store.Event
	if rec := c.Gate.Rule; rec != nil {
		evs = append(evs, event(r, RuleEvent{CallID: c.ID, Rule: *rec, Tool: c.Tool}))
	}
	for _, rec := range c.Gate.Shadow {
		ev := event(r, RuleEvent{CallID: c.ID, Rule: rec, Tool: c.Tool})
		ev.Type = EventRuleShadow
		evs = append(evs, ev)
	}
	return evs
}

func (RuleEvent) eventType() store.EventType { return EventRuleMatched }

// Verdict is what a spec's policy decides for a sample call (agentctl
// policy test): the effect, the rule that decided (nil: the tool's own
// policy), who may decide, and the shadow rules that matched.
type Verdict struct {
	Effect string // deny, require or allow
	Rule   *store.RuleRecord
	// Approvers are the rule's approvers when it names any, else the
	// tool's (else its agent's): users and group:NAME.
	Approvers []string
	Approvals int // distinct approvals needed: the tool's and the rule's, the larger
	Shadow    []store.RuleRecord
	Why       string // in words
}

// Decide returns what spec s decides for call c of agent c.Agent: its
// rules first, else the tool's requireApproval and the agent's
// requireToolApproval. An unknown agent or tool is an error.
func Decide(s *spec.Spec, c RuleCall) (Verdict, error) {
	a, ok := s.Agents[c.Agent]
	if !ok {
		return Verdict{}, &UnknownError{What: "agent", Name: c.Agent}
	}
	c.Decl, _, _ = strings.Cut(c.Tool, ".")
	t, ok := s.Tools[c.Decl]
	if !ok || !slices.Contains(a.Tools, c.Decl) {
		return Verdict{}, &UnknownError{What: "tool", Name: c.Tool, Known: a.Tools}
	}
	if len(c.Path) == 0 {
		c.Path = []string{c.Agent}
	}
	m, shadows := s.Policy.Match(c)
	v := Verdict{Approvals: t.Approvals}
	for _, sh := range shadows {
		v.Shadow = append(v.Shadow, Record(sh, c.At))
	}
	own := t.Approvers
	if own.Empty() {
		own = a.Approvers
	}
	v.Approvers = append(slices.Clone(own.Users), prefixed("group:", own.Groups)...)
	if m != nil {
		rec := Record(*m, c.At)
		v.Rule, v.Effect, v.Why = &rec, m.Rule.Effect.String(), rec.Phrase()
		if len(rec.Approvers) > 0 {
			v.Approvers = rec.Approvers
		}
		v.Approvals = max(v.Approvals, rec.Approvals)
	} else {
		need, err := t.RequireApproval.Eval(map[string]any{"input": c.Input, "run": map[string]any{"id": "", "agent": c.Agent, "step": 1}})
		switch {
		case err != nil:
			v.Effect, v.Why = "require", "no rule matched; the tool's requireApproval failed to evaluate: "+err.Error()
		case need:
			v.Effect, v.Why = "require", "no rule matched; the tool's requireApproval holds"
		case a.RequireToolApproval:
			v.Effect, v.Why = "require", "no rule matched; the agent's requireToolApproval holds"
		default:
			v.Effect, v.Why = "allow", "no rule matched; the tool needs no approval"
		}
	}
	if v.Effect != "require" {
		v.Approvers, v.Approvals = nil, 0
	}
	return v, nil
}

// labelsOf returns run r's labels (run --label), from its state.
func labelsOf(r *store.Run) map[string]string {
	st, err := decodeState(r)
	if err != nil {
		return nil
	}
	return st.Labels
}

// Label limits: how many labels a run takes, and the bytes of a key or
// a value.
const (
	MaxLabels   = 32
	MaxLabelLen = 256
)

// checkLabels refuses labels a run may not take (they come from the
// starter, over the API too): too many, too long, or a key other than
// letters, digits, '.', '_' and '-'.
func checkLabels(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return usagef("%d labels: a run takes at most %d", len(labels), MaxLabels)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		bad := strings.IndexFunc(k, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
		})
		switch {
		case k == "" || bad >= 0:
			return usagef("label %q: a key is letters, digits, '.', '_' and '-'", k)
		case len(k) > MaxLabelLen || len(labels[k]) > MaxLabelLen:
			return usagef("label %q: a key or value is over %d bytes", k, MaxLabelLen)
		}
	}
	return nil
}
