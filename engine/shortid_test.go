package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

const treeSpec = `
version: 1
models:
  lead: {provider: scripted, turns: [{toolCalls: [{tool: helper, args: {task: x}}]}, {text: done}]}
  help: {provider: scripted, turns: [{toolCalls: [{tool: act, args: {}}]}, {text: ok}]}
tools:
  act: {input: {type: object}, output: acted, requireApproval: true}
agents:
  lead: {model: lead, agents: [helper]}
  helper: {description: Helps., model: help, tools: [act]}
`

// TestShortIDInTree: a tree's runs are created in the same millisecond,
// so they share their first 10 characters; each run's short id is unique
// and resolves to it.
func TestShortIDInTree(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	e := New(openDB(t), Config{Now: func() time.Time { return at }})
	v, err := e.Start(ctx, compile(t, treeSpec), StartOptions{Agent: "lead", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Pending) != 1 || v.Pending[0].RunID == v.RunID {
		t.Fatalf("want a child's call pending: %+v", v)
	}
	root, child := v.RunID, v.Pending[0].RunID
	if root[:MinShortID] != child[:MinShortID] {
		t.Fatalf("the clock is fixed, yet %s and %s differ in their first %d characters", root, child, MinShortID)
	}
	var amb *store.AmbiguousError
	if _, err := e.Resolve(ctx, root[:MinShortID]); !errors.As(err, &amb) {
		t.Fatalf("resolve %s: %v, want ambiguous", root[:MinShortID], err)
	}
	for _, id := range []string{root, child} {
		short, err := e.ShortID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(short) <= MinShortID || len(short) >= len(id) || !strings.HasPrefix(id, short) {
			t.Errorf("short id of %s: %s", id, short)
		}
		if got, err := e.Resolve(ctx, short); err != nil || got != id {
			t.Errorf("resolve %s: %s, %v; want %s", short, got, err, id)
		}
		if _, err := e.Resolve(ctx, short[:len(short)-1]); !errors.As(err, &amb) {
			t.Errorf("%s is not the shortest: %s resolves (%v)", short, short[:len(short)-1], err)
		}
	}
}
