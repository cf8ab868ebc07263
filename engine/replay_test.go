package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/engine/store"
)

// A run started with a cassette is never advanced by a live model: a
// worker without one, handed the run by a detached decision, stalls it.
func TestReplayRunNeverLive(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	g := compile(t, fourEyesSpec)
	v, err := New(db, Config{Replay: "cas.jsonl"}).Start(ctx, g, StartOptions{Agent: "dba", Input: "x"})
	if err != nil || v.Status != store.Suspended {
		t.Fatalf("start: %v %v", v, err)
	}
	for _, who := range []string{"ann", "ben"} {
		d := &store.Decision{RunID: v.RunID, CallID: "call_1", Action: store.Approve, By: who, OSUser: who, Needed: 2}
		if _, err := db.Decide(ctx, []*store.Decision{d}, store.Lease{}); err != nil {
			t.Fatal(err)
		}
	}
	w, ok, err := New(db, Config{}).Work(ctx, "")
	if err != nil || !ok || w.Status != store.Stalled || !strings.Contains(w.Error, "started with --replay cas.jsonl") {
		t.Fatalf("a worker without the cassette: %+v %v %v, want the run stalled", w, ok, err)
	}
}
