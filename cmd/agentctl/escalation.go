package main

import (
	"fmt"
	"io"

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
			fmt.Fprintf(w, "    escalated: %s at %s\n", escaped(s.String(), false), stamp(*s.At))
		}
	}
	if next := v.Next(); next != nil {
		fmt.Fprintf(w, "    next: %s due %s\n", escaped(next.String(), false), stamp(next.Due))
	}
}
