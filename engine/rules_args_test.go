package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/engine/store"
)

// An approval that edits a call's arguments (--args) is held to the
// rules those arguments match: a deny rule refuses it, and a require
// rule the call was not gated by refuses it too, as its approvers and
// approvals were never asked.
func TestEditedArgsMeetTheRules(t *testing.T) {
	ctx := context.Background()
	l := newLadderEnv(t)
	e := l.engine()
	s := ladder + `
policy:
  rules:
    - {name: no-db, when: '${{ input.service == "db" }}', effect: deny, reason: never}
    - {name: api-review, when: '${{ input.service == "api" }}', effect: require, approvers: [carol], approvals: 2}
`
	for _, edit := range []string{`{"service":"db"}`, `{"service":"api"}`} {
		v, err := e.Start(ctx, compile(t, s), StartOptions{Agent: "ops", Input: "go"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "alice", Args: []byte(edit)})
		if !errors.Is(err, store.ErrForbidden) {
			t.Fatalf("alice approves with --args %s: %v, want forbidden", edit, err)
		}
	}
	v, err := e.Start(ctx, compile(t, s), StartOptions{Agent: "ops", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	v, err = e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "alice", Args: []byte(`{"service":"cache"}`)})
	if err != nil || !strings.Contains(v.Output, "told") {
		t.Fatalf("alice approves with --args matching no rule: %v %v", v, err)
	}
}
