package storetest

import (
	"errors"
	"strings"

	"github.com/agentctl/agentctl/engine/store"
)

// ReadTree reads a whole tree from any of its runs: the runs root
// first, every call, and the decisions when asked.
func testReadTree(e *env) {
	s := e.handle()
	newRun(e, s, "01A", lease, store.CallPending)
	child := &store.Run{ID: "01B", Agent: "db_admin", Status: store.Running, SpecHash: "h1", State: []byte("{}"),
		ParentID: "01A", ParentCall: "call_1", RootID: "01A", Path: []string{"oncall", "db_admin"}}
	if err := s.CreateRun(e.ctx, child, []byte("spec"), lease); err != nil {
		e.t.Fatal(err)
	}
	child.Step = 1
	calls := []*store.Call{
		{ID: "call_1/call_1", Seq: 1, Step: 1, Tool: "drop", Args: []byte("{}"), Status: store.CallApproved},
		{ID: "call_1/call_2", Seq: 2, Step: 1, Tool: "drop", Args: []byte("{}"), Status: store.CallPending, Kind: store.KindApproval},
	}
	if err := s.Checkpoint(e.ctx, lease, child, calls); err != nil {
		e.t.Fatal(err)
	}
	newRun(e, s, "01C", lease, store.CallApproved) // another tree
	for _, d := range []*store.Decision{
		{RunID: "01A", CallID: "call_1", Action: store.Approve, By: "alice", OSUser: "alice"},
		{RunID: "01B", CallID: "call_1/call_2", Action: store.Decline, By: "bob", OSUser: "bob", Reason: "no"},
	} {
		if _, err := s.Decide(e.ctx, []*store.Decision{d}, store.Lease{}); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, id := range []string{"01A", "01B"} {
		t, err := s.ReadTree(e.ctx, id, true)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(t.Runs) != 2 || t.Runs[0].ID != "01A" || t.Runs[1].ID != "01B" || t.Runs[1].RootID != "01A" {
			e.t.Fatalf("runs from %s: %+v", id, t.Runs)
		}
		var got []string
		for _, c := range t.Calls {
			got = append(got, c.RunID+"/"+c.ID+":"+string(c.Status))
		}
		if want := "01A/call_1:approved 01B/call_1/call_1:approved 01B/call_1/call_2:declined"; strings.Join(got, " ") != want {
			e.t.Errorf("calls from %s: %s, want %s", id, strings.Join(got, " "), want)
		}
		if len(t.Decisions) != 2 || t.Decisions[0].By != "alice" || t.Decisions[1].Reason != "no" || t.Decisions[1].RunID != "01B" {
			e.t.Errorf("decisions from %s: %+v", id, t.Decisions)
		}
	}
	if t, err := s.ReadTree(e.ctx, "01B", false); err != nil || t.Decisions != nil {
		e.t.Errorf("without decisions: %+v, %v", t, err)
	}
	var nf *store.NotFoundError
	if _, err := s.ReadTree(e.ctx, "01Z", true); !errors.As(err, &nf) {
		e.t.Errorf("an unknown run: %v, want a NotFoundError", err)
	}
}
