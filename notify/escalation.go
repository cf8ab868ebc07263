package notify

import (
	"fmt"
	"strings"
)

// EscalationStep is the step of a call's escalation ladder an escalated
// notification reports.
type EscalationStep struct {
	Step      int      `json:"step"` // its place in the ladder, from 1
	After     string   `json:"after"`
	Kind      string   `json:"kind"`                // remind, addApprovers or decide
	Approvers []string `json:"approvers,omitempty"` // those addApprovers added
	Decide    string   `json:"decide,omitempty"`    // decline or expire
	Reason    string   `json:"reason,omitempty"`
}

// Text says the step in words: "step 2 (after 1h): group:sre-leads may
// decide too".
func (s *EscalationStep) Text() string {
	if s == nil {
		return ""
	}
	t := fmt.Sprintf("step %d (after %s)", s.Step, s.After)
	switch s.Kind {
	case "remind":
		return t + ": a reminder"
	case "addApprovers":
		return t + ": " + strings.Join(s.Approvers, ", ") + " may decide too"
	case "decide":
		return t + ": " + s.Decide + "d by agentctl: " + s.Reason
	}
	return t
}

// escalation is the step of m in a summary: ", step 1 (after 15m): a
// reminder"; "" for none.
func (m *Message) escalation() string {
	if m.Escalation == nil {
		return ""
	}
	return ", " + oneLine(m.Escalation.Text(), 200)
}

// decided reports whether m is an escalated notification of a step
// that decided its call: no button decides it any more.
func (m *Message) decided() bool {
	return m.Type == Escalated && m.Escalation != nil && m.Escalation.Kind == "decide"
}
