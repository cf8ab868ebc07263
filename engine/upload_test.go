package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
)

// An uploaded spec's rules travel with its snapshot: another engine (a
// worker) that loads the run keeps them. Every call waits, even one of
// a tool without a gate; no grant skips the next; its author never
// approves; what the call will do is shown, secrets as [env.NAME].
func TestUploadRulesTravelWithTheSnapshot(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	s, err := spec.Load([]spec.Source{{Name: "spec", Data: []byte(oncall)}})
	if err != nil {
		t.Fatal(err)
	}
	up := Upload{By: "mallory", Digest: Digest([]byte(oncall)), Every: true}
	g, err := New(db, Config{}).CompileUpload(s, up)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(db, Config{}).CompileUpload(s, Upload{}); err == nil {
		t.Fatal("an upload without an uploader compiled")
	}
	v, err := New(db, Config{}).Start(ctx, g, StartOptions{Agent: "oncall", Input: "x", StartedBy: "mallory"})
	if err != nil {
		t.Fatal(err)
	}
	// check has no gate of its own: it waits too.
	if v.Status != store.Suspended || len(v.Pending) != 3 {
		t.Fatalf("after start: %+v", v)
	}
	worker := New(db, Config{}) // compiles the run's spec from its snapshot
	d, err := worker.Inspect(ctx, v.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Upload == nil || *d.Upload != up {
		t.Fatalf("the upload as the worker reads it: %+v", d.Upload)
	}
	p := d.Pending[0]
	if p.Gate == nil || p.Gate.Reasons[0].Kind != store.ReasonUpload || p.Action == nil || p.Action.Rendered == nil ||
		p.Action.Rendered.Text != "nginx is down" || p.Action.Template.Text != "${{ input.service }} is down" {
		t.Fatalf("the first call as the worker shows it: %+v %+v", p.Gate, p.Action)
	}
	var fe *store.ForbiddenError
	_, err = worker.Decide(ctx, Decision{RunID: v.RunID, CallID: p.CallID, Action: store.Approve, By: "mallory", OSUser: "mallory"})
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "mallory uploaded the spec") {
		t.Fatalf("the author approves: %v", err)
	}
	_, err = worker.Decide(ctx, Decision{RunID: v.RunID, CallID: p.CallID, Action: store.Approve, By: "mallory", OSUser: "root"})
	if !errors.As(err, &fe) {
		t.Fatalf("a delegate approves as the author: %v", err)
	}
	v, err = worker.Decide(ctx, Decision{RunID: v.RunID, All: true, Action: store.Approve, By: "alice", OSUser: "alice", Always: true})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != store.Completed {
		t.Fatalf("after alice approves all: %+v", v)
	}
}

// A snapshot written before uploads (an array of sources) still loads,
// as a configured spec's.
func TestOldSnapshotLoads(t *testing.T) {
	g := compile(t, oncall)
	if g.snapshot[0] != '[' {
		t.Fatalf("a configured spec's snapshot changed shape: %.20s", g.snapshot)
	}
	h, err := LoadSnapshot(g.snapshot, nil, nil)
	if err != nil || h.upload != nil || h.hash != g.hash {
		t.Fatalf("reload: %v %+v", err, h)
	}
	if _, _, err := decodeSnapshot([]byte(`{"sources":[]}`)); err == nil {
		t.Fatal("an upload's snapshot without its uploader loaded")
	}
}
