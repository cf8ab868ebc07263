package storetest

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// testPreviewHold: a call approved, then held for a new decision (its
// preview drifted: a move back to pending with a new gate), has its
// approvals cleared and its gate replaced; approvals of the preview
// replaced no longer count against their approvers, who may approve the
// new one, once each. Regate replaces a waiting call's gate only while
// it is the one the caller read.
func testPreviewHold(e *env) {
	s := e.handle()
	newRun(e, s, "01A", lease, store.CallPending)
	approve := func(by, digest string) error {
		data, _ := json.Marshal(map[string]string{"preview": digest})
		_, err := s.Decide(e.ctx, []*store.Decision{{RunID: "01A", CallID: "call_1", Action: store.Approve, By: by, OSUser: by, Needed: 2, Data: data}}, lease)
		return err
	}
	call := func() *store.Call {
		calls, err := s.Calls(e.ctx, "01A")
		if err != nil {
			e.t.Fatal(err)
		}
		return calls[0]
	}
	if err := approve("alice", "d1"); err != nil {
		e.t.Fatal(err)
	}
	if err := approve("bob", "d1"); err != nil || call().Status != store.CallApproved || call().Approvals != 2 {
		e.t.Fatalf("bob's approval: %v, call %s with %d approvals; want approved", err, call().Status, call().Approvals)
	}
	e.clock.add(time.Second)
	held := store.Gate{Verdict: store.GateRequired, Preview: &store.Preview{Status: store.PreviewOK, Output: "+2", Digest: "d2"},
		Drift: &store.Drift{Cause: "output", Approved: store.Preview{Status: store.PreviewOK, Output: "+1", Digest: "d1"}}}
	m := store.Move{RunID: "01A", CallID: "call_1", From: store.CallApproved, To: store.CallPending, Kind: store.KindApproval, Gate: &held}
	if err := s.MoveCall(e.ctx, lease, m); err != nil {
		e.t.Fatal(err)
	}
	if c := call(); c.Status != store.CallPending || c.Approvals != 0 || c.Gate.Preview == nil || c.Gate.Preview.Digest != "d2" || c.Gate.Drift == nil {
		e.t.Fatalf("held call: %s, %d approvals, gate %+v; want pending, none, the new preview", c.Status, c.Approvals, c.Gate)
	}
	if err := approve("alice", "d2"); err != nil || call().Status != store.CallPending {
		e.e("alice's approval of the new preview: %v, call %s; want it counted, still pending", err, call().Status)
	}
	var fe *store.ForbiddenError
	if err := approve("alice", "d2"); !errors.As(err, &fe) {
		e.e("alice's second approval of the new preview: %v; want forbidden", err)
	}
	if err := approve("bob", "d2"); err != nil || call().Status != store.CallApproved {
		e.e("bob's approval of the new preview: %v, call %s; want approved", err, call().Status)
	}

	newRun(e, s, "01B", lease, store.CallPending)
	calls, err := s.Calls(e.ctx, "01B")
	if err != nil {
		e.t.Fatal(err)
	}
	old, again := calls[0].Gate, store.Gate{Verdict: store.GateRequired, Preview: &store.Preview{Status: store.PreviewOK, Digest: "d3"}}
	if err := s.Regate(e.ctx, "01B", "call_1", again, again); !errors.Is(err, store.ErrConflict) {
		e.e("Regate from a gate the call does not have: %v; want a conflict", err)
	}
	if err := s.Regate(e.ctx, "01B", "call_1", old, again); err != nil {
		e.e("Regate: %v", err)
	}
	if calls, _ := s.Calls(e.ctx, "01B"); calls[0].Gate.Preview == nil || calls[0].Gate.Preview.Digest != "d3" {
		e.e("Regate left the gate %+v", calls[0].Gate)
	}
}
