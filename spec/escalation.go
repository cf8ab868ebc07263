package spec

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/internal/duration"
	"github.com/agentctl/agentctl/notify"
)

// Kinds of escalation step.
const (
	StepRemind       = "remind"       // notify the call's targets again
	StepAddApprovers = "addApprovers" // widen who may decide
	StepDecide       = "decide"       // decline or expire the call
)

// EscalationStep is one step of an escalation ladder: what happens to a
// call still waiting for approval After it started waiting.
type EscalationStep struct {
	Pos   Pos
	After time.Duration
	// Kind is StepRemind, StepAddApprovers or StepDecide.
	Kind string
	// AddApprovers may decide the call from this step on, besides its
	// own approvers (StepAddApprovers).
	AddApprovers Approvers
	// Notify are the targets this step notifies; empty: the call's own
	// (its run's agents' notify:).
	Notify []notify.Target
	// Decide is "decline" or "expire" (StepDecide), with Reason.
	Decide string
	Reason string
	path   string // where it is declared, for messages
}

// Escalation returns the ladder that holds the calls of tool t made by
// agent a: the tool's own, else the agent's, else the spec's policy's;
// nil for none. t may be nil.
func (s *Spec) Escalation(a *Agent, t *Tool) []EscalationStep {
	switch {
	case t != nil && len(t.Escalation) > 0:
		return t.Escalation
	case a != nil && len(a.Escalation) > 0:
		return a.Escalation
	}
	return s.Policy.Escalation
}

// Ladders returns the spec's escalation ladders: its tools', its
// agents', then its policy's.
func (s *Spec) Ladders() [][]EscalationStep {
	var out [][]EscalationStep
	for _, name := range slices.Sorted(maps.Keys(s.Tools)) {
		out = append(out, s.Tools[name].Escalation)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Agents)) {
		out = append(out, s.Agents[name].Escalation)
	}
	return append(out, s.Policy.Escalation)
}

// escalation decodes an escalation: ladder at path; the schema has
// checked each step's shape and fields.
func (d *decoder) escalation(f *file, n *yaml.Node, path string) []EscalationStep {
	var out []EscalationStep
	for i, it := range items(n) {
		at := fmt.Sprintf("%s[%d]", path, i)
		s := EscalationStep{Pos: f.pos(it), After: d.duration(f, field(it, "after"), at+".after"), path: at}
		kinds := 0
		if boolean(field(it, "remind")) {
			s.Kind, kinds = StepRemind, kinds+1
		}
		if field(it, "addApprovers") != nil {
			s.Kind, kinds = StepAddApprovers, kinds+1
			s.AddApprovers = d.approvers(f, field(it, "addApprovers"), at+".addApprovers")
			d.noOnCall(s.AddApprovers, at+".addApprovers")
		}
		if dn := scalar(field(it, "decide")); dn != nil {
			s.Kind, kinds = StepDecide, kinds+1
			s.Decide, s.Reason = dn.Value, str(field(it, "reason"))
			switch dn.Value {
			case "decline", "expire":
			case "approve":
				d.errs.add(f.pos(dn), "%s.decide: a step never approves a call: use decline or expire", at)
			default:
				d.errs.add(f.pos(dn), "%s.decide: %q is not decline or expire", at, dn.Value)
			}
		}
		s.Notify = d.notify(f, onEscalated(field(it, "notify")), at+".notify")
		switch {
		case kinds != 1:
			d.errs.add(s.Pos, "%s: a step does exactly one of remind: true, addApprovers or decide", at)
			s.Kind = ""
		case len(s.Notify) > 0 && s.Kind == StepDecide:
			d.errs.add(s.Pos, "%s.notify: a decide step notifies the call's own targets (expired); notify: goes with remind or addApprovers", at)
		}
		if i > 0 && s.After <= out[i-1].After && s.After > 0 {
			d.errs.add(f.pos(field(it, "after")), "%s.after: %s is not after the step before (%s): steps are in increasing after order",
				at, duration.Short(s.After), duration.Short(out[i-1].After))
		}
		if i > 0 && out[i-1].Kind == StepDecide && out[i-1].Decide != "" {
			d.errs.add(s.Pos, "%s: never happens: the step before decides the call", at)
		}
		out = append(out, s)
	}
	return out
}

// escalations checks, for each agent and tool, that the call's
// approvalTimeout (the short form of a final decline) leaves room for
// every step of its ladder: a step due at or after the deadline never
// happens. Each step is reported once.
func (d *decoder) escalations() {
	seen := map[Pos]bool{}
	for _, an := range slices.Sorted(maps.Keys(d.spec.Agents)) {
		a := d.spec.Agents[an]
		for _, tn := range a.Tools {
			t := d.spec.Tools[tn]
			if t == nil {
				continue
			}
			timeout := cmp.Or(t.ApprovalTimeout, a.ApprovalTimeout)
			for _, s := range d.spec.Escalation(a, t) {
				if timeout > 0 && s.After >= timeout && !seen[s.Pos] {
					seen[s.Pos] = true
					d.errs.add(s.Pos, "%s: the step after %s never happens for tool %s of agent %s: its approvalTimeout (%s) declines the call first; drop approvalTimeout and end the ladder with decide: decline",
						s.path, duration.Short(s.After), tn, an, duration.Short(timeout))
				}
			}
		}
	}
}

// onEscalated gives each target of a step's notify: list that says no
// on: the one it is for, escalated (a copy: the spec's nodes are left
// as written).
func onEscalated(n *yaml.Node) *yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return n
	}
	c := *n
	c.Content = nil
	for _, it := range n.Content {
		if it.Kind == yaml.MappingNode && field(it, "on") == nil {
			m := *it
			m.Content = append(slices.Clone(it.Content),
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "on", Line: it.Line, Column: it.Column},
				&yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: it.Line, Column: it.Column, Content: []*yaml.Node{
					{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(notify.Escalated), Line: it.Line, Column: it.Column}}})
			it = &m
		}
		c.Content = append(c.Content, it)
	}
	return &c
}
