package store

import (
	"strings"
	"time"
)

// OnCall is who was on call on one schedule when a call started
// waiting: they, mapped to agentctl users, may decide it. When the
// schedule could not be read, Error says why and Fallback may decide
// instead; no fallback: nobody from this schedule.
type OnCall struct {
	// Source names the schedule: "pagerduty/PABC123" ("@1": at escalation
	// level 1), "opsgenie/ops-primary".
	Source string    `json:"source"`
	At     time.Time `json:"at"`
	// People are those on call as the schedule names them: email, else
	// id, else name.
	People []string `json:"people,omitempty"`
	// Users are the agentctl users they map to (users:), who may decide.
	Users []string `json:"users,omitempty"`
	// Error says why the schedule gave nobody (down, refused, empty).
	Error string `json:"error,omitempty"`
	// Fallback are the users and group:NAME who may decide instead, when
	// Error is set.
	Fallback []string `json:"fallback,omitempty"`
}

// Phrase says what the schedule gave, as show, the inbox and
// notifications say it.
func (o OnCall) Phrase() string {
	s := "on call on " + o.Source + " at " + o.At.UTC().Format(time.RFC3339) + ": "
	if o.Error == "" {
		return s + strings.Join(o.Users, ", ")
	}
	s += "unread (" + o.Error + "); "
	if len(o.Fallback) == 0 {
		return s + "no fallback: nobody from this schedule may decide"
	}
	return s + "fallback: " + strings.Join(o.Fallback, ", ")
}

// phraseOnCall appends each schedule's phrase to a gate's.
func phraseOnCall(ocs []OnCall) string {
	var s string
	for _, o := range ocs {
		s += "; " + o.Phrase()
	}
	return s
}
