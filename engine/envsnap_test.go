package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
)

// TestSnapshotAnyEnv: a run's snapshot written before env was read only
// by literal names still compiles, so the run can be decided, and its
// expressions still see only the variables their declaration names
// literally: env[input.k] and toJSON(env) reach no other.
func TestSnapshotAnyEnv(t *testing.T) {
	t.Setenv("SNAP_SECRET", "snap-secret-2468")
	t.Setenv("SNAP_OTHER", "snap-other-1357")
	src := `
version: 1
models:
  m:
    provider: scripted
    turns:
      - toolCalls: [{tool: peek, args: {k: SNAP_OTHER}}]
      - text: "${{ results[0] }}"
tools:
  peek:
    input: {type: object, properties: {k: {type: string}}}
    output: "named=${{ env.SNAP_SECRET }} picked=${{ env[input.k] }} all=${{ toJSON(env) }}"
agents:
  a: {model: m, tools: [peek]}
`
	if _, err := spec.Load([]spec.Source{{Name: "spec.yaml", Data: []byte(src)}}); err == nil || !strings.Contains(err.Error(), "computed name") {
		t.Fatalf("Load: %v, want env[input.k] refused", err)
	}
	snap, err := json.Marshal([]spec.Source{{Name: "spec.yaml", Data: []byte(src)}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := LoadSnapshot(snap, nil, nil)
	if err != nil {
		t.Fatalf("LoadSnapshot: %v", err)
	}
	v, err := New(openDB(t), Config{}).Start(context.Background(), g, StartOptions{Agent: "a", Input: "x"})
	if err != nil {
		t.Fatal(err)
	}
	want := "named=[env.SNAP_SECRET] picked= all={\n  \"SNAP_SECRET\": \"[env.SNAP_SECRET]\"\n}"
	if v.Status != store.Completed || v.Output != want {
		t.Errorf("status %s, output %q; want %q", v.Status, v.Output, want)
	}
}
