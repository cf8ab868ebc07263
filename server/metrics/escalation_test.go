package metrics

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store/sqlite"
	"github.com/agentctl/agentctl/spec"
)

// The steps of escalation ladders the engine takes are counted by step
// and kind, each once.
func TestEscalationsCounted(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "a.db"), sqlite.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g := compileSpec(t, `
version: 1
models:
  script: {provider: scripted, turns: [{toolCalls: [{tool: restart}]}, {text: done}]}
tools:
  restart: {output: restarted, requireApproval: true}
agents:
  oncall:
    model: script
    tools: [restart]
    escalation:
      - {after: 1m, remind: true}
      - {after: 2m, addApprovers: [bob]}
      - {after: 3m, decide: decline}
`)
	m := New(Options{})
	e := engine.New(db, engine.Config{Observer: m, Now: clock})
	if _, err := e.Start(ctx, g, engine.StartOptions{Agent: "oncall", Input: "x"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	for range 2 {
		if _, err := e.ExpireAll(ctx, ""); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP agentctl_escalations_total Steps of escalation ladders this process took, by step (its place in the ladder, from 1) and kind (remind, addApprovers, decide).
# TYPE agentctl_escalations_total counter
agentctl_escalations_total{kind="addApprovers",step="2"} 1
agentctl_escalations_total{kind="remind",step="1"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "agentctl_escalations_total"); err != nil {
		t.Fatal(err)
	}
}

// compileSpec loads and compiles a spec's text.
func compileSpec(t *testing.T, src string) *engine.Graph {
	t.Helper()
	s, err := spec.Load([]spec.Source{{Name: "spec.yaml", Data: []byte(src)}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := engine.Compile(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
