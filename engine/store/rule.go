package store

import (
	"fmt"
	"strings"
	"time"
)

// GateDenied: a policy rule (Gate.Rule) denied the call: it never ran,
// and nobody may approve it.
const GateDenied Verdict = "denied"

// ReasonRule: the policy rule (Detail: its name) requires, allows or
// denies the call.
const ReasonRule ReasonKind = "rule"

// RuleRecord is what a policy rule decided for a call, kept in the
// call's gate: the rule, its effect and reason, and for a require rule
// who may decide on top of the tool's own approvers.
type RuleRecord struct {
	Name   string `json:"name"`
	Effect string `json:"effect"` // deny, require or allow
	Reason string `json:"reason,omitempty"`
	// Approvers (users and group:NAME) must also name whoever decides.
	Approvers []string `json:"approvers,omitempty"`
	// Approvals is the rule's count of distinct approvals (0: none set).
	Approvals int `json:"approvals,omitempty"`
	// SeparateDuties: the run's starter may not approve.
	SeparateDuties bool `json:"separateDuties,omitempty"`
	// Error is why the rule's condition failed to evaluate: a deny or
	// require rule then applies (fails closed).
	Error string `json:"error,omitempty"`
	// At is the time the rule was evaluated at (its now).
	At time.Time `json:"at"`
}

// Phrase says what the rule decided: "denied by rule weekend-freeze:
// weekend freeze".
func (r RuleRecord) Phrase() string {
	s := map[string]string{"deny": "denied", "require": "required", "allow": "allowed"}[r.Effect] + " by rule " + r.Name
	if r.Reason != "" {
		s += ": " + r.Reason
	}
	var more []string
	if len(r.Approvers) > 0 {
		more = append(more, "approvers "+strings.Join(r.Approvers, ", "))
	}
	if r.Approvals > 1 {
		more = append(more, fmt.Sprintf("%d approvals", r.Approvals))
	}
	if r.SeparateDuties {
		more = append(more, "separate duties")
	}
	if r.Error != "" {
		more = append(more, "its condition failed ("+r.Error+"), so it applies")
	}
	if len(more) > 0 {
		s += " (" + strings.Join(more, "; ") + ")"
	}
	return s
}

// ruleReason is the reason of the rule that required a call, as
// " (reason)", or "".
func (g Gate) ruleReason() string {
	if g.Rule == nil || g.Rule.Reason == "" {
		return ""
	}
	return " (" + g.Rule.Reason + ")"
}
