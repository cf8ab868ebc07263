package metrics

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlite"
	"github.com/agentctl/agentctl/spec"
)

// TestRealStore: a run of the engine on SQLite waiting for approval, and
// a tool call and a model turn observed through the engine's Observer.
func TestRealStore(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "a.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, ok := any(db).(interface {
		Stats(context.Context) (store.Stats, error)
	})
	if !ok {
		t.Skip("this store has no Stats (store.ServerStore)")
	}
	s, err := spec.Load([]spec.Source{{Name: "spec.yaml", Data: []byte(`
version: 1
models:
  script: {provider: scripted, turns: [{toolCalls: [{tool: check}, {tool: restart}]}, {text: done}]}
tools:
  check: {output: fine}
  restart: {output: restarted, requireApproval: true}
agents:
  oncall: {model: script, tools: [check, restart], instructions: be careful}
`)}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := engine.Compile(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{Stats: st.Stats, Now: func() time.Time { return time.Now().Add(time.Hour) }})
	if _, err := engine.New(db, engine.Config{Observer: m}).Start(ctx, g, engine.StartOptions{Agent: "oncall", Input: "x"}); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP agentctl_calls_waiting Calls waiting for a human, by kind (approval, suspend: resume data, interrupted: retry or resolve).
# TYPE agentctl_calls_waiting gauge
agentctl_calls_waiting{kind="approval"} 1
agentctl_calls_waiting{kind="interrupted"} 0
agentctl_calls_waiting{kind="suspend"} 0
# HELP agentctl_runs Runs in the store, by status.
# TYPE agentctl_runs gauge
agentctl_runs{status="completed"} 0
agentctl_runs{status="failed"} 0
agentctl_runs{status="queued"} 0
agentctl_runs{status="running"} 0
agentctl_runs{status="stalled"} 0
agentctl_runs{status="suspended"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "agentctl_runs", "agentctl_calls_waiting"); err != nil {
		t.Fatal(err)
	}
	body := scrape(t, m)
	for _, line := range []string{
		`agentctl_tool_call_duration_seconds_count{outcome="succeeded",tool="check",toolkit="output"} 1`,
		`agentctl_model_call_duration_seconds_count{model="script",outcome="ok",provider="scripted"} 1`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("missing %s", line)
		}
	}
	// The pending approval has waited about an hour by the clock given.
	var age float64
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, "agentctl_oldest_pending_approval_age_seconds "); ok {
			age, _ = strconv.ParseFloat(v, 64)
		}
	}
	if age < 3500 || age > 3700 {
		t.Errorf("oldest pending approval: %vs, want about 3600", age)
	}
}
