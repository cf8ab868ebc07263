package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentctl/agentctl/engine"
)

// printEscalation says, under a pending call, which steps of its
// escalation ladder happened and when, and which is next and when it is
// due.
func printEscalation(w io.Writer, v *engine.EscalationView) {
	if v == nil {
		return
	}
	for _, s := range v.Steps {
		if s.At != nil {
			fmt.Fprintf(w, "    escalated: %s at %s\n", stepText(s), stamp(*s.At))
		}
	}
	if next := v.Next(); next != nil {
		fmt.Fprintf(w, "    next: %s due %s\n", stepText(*next), stamp(next.Due))
	}
}

// stepText is a step in words: "step 2 (after 1h) addApprovers
// group:sre-leads".
func stepText(s engine.EscalationStepView) string {
	t := fmt.Sprintf("step %d (after %s) %s", s.Step, s.After, s.Kind)
	switch {
	case len(s.Approvers) > 0:
		t += " " + strings.Join(s.Approvers, ", ")
	case s.Decide != "" && s.Reason != "":
		t += " " + s.Decide + ": " + escaped(s.Reason, false)
	case s.Decide != "":
		t += " " + s.Decide
	}
	return t
}
