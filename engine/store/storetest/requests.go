package storetest

import (
	"errors"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// testRequests: a request's idempotency key is recorded with the run it
// creates or the decision it makes, in the same transaction, and read
// back for a day; a change that repeats a live key is refused
// (ErrRequestSeen, a conflict) and changes nothing.
func testRequests(e *env) {
	s := server(e)
	k1 := &store.Request{Key: "k1", Hash: "h-start"}
	r := &store.Run{ID: "01A", Agent: "oncall", Status: store.Running, Input: "x", SpecHash: "h1", State: []byte(`{}`), Request: k1}
	if err := s.CreateRun(e.ctx, r, []byte("spec"), lease); err != nil {
		e.t.Fatal(err)
	}
	if q, err := s.Requested(e.ctx, "k1"); err != nil || q.RunID != "01A" || q.Hash != "h-start" || !q.At.Equal(e.clock.now()) {
		e.e("Requested(k1) = %+v, %v", q, err)
	}
	again := &store.Run{ID: "01B", Agent: "oncall", Status: store.Running, Input: "x", SpecHash: "h1", State: []byte(`{}`), Request: k1}
	if err := s.CreateRun(e.ctx, again, []byte("spec"), lease); !errors.Is(err, store.ErrRequestSeen) || !errors.Is(err, store.ErrConflict) {
		e.e("a second run with key k1: %v, want ErrRequestSeen", err)
	}
	if _, err := s.Run(e.ctx, "01B"); !errors.Is(err, store.ErrNotFound) {
		e.e("the refused run was stored: %v", err)
	}
	suspended(e, s, "01C", 2)
	k2 := &store.Request{Key: "k2", Hash: "h-approve"}
	approve := func(call string, req *store.Request) error {
		_, err := s.Decide(e.ctx, []*store.Decision{{RunID: "01C", CallID: call, Action: store.Approve, By: "alice", Request: req}}, store.Lease{})
		return err
	}
	if err := approve("call_1", k2); err != nil {
		e.t.Fatal(err)
	}
	if q, err := s.Requested(e.ctx, "k2"); err != nil || q.RunID != "01C" || q.Hash != "h-approve" {
		e.e("Requested(k2) = %+v, %v", q, err)
	}
	if err := approve("call_2", k2); !errors.Is(err, store.ErrRequestSeen) {
		e.e("a second decision with key k2: %v, want ErrRequestSeen", err)
	}
	if calls, _ := s.Calls(e.ctx, "01C"); calls[1].Status != store.CallPending {
		e.e("the refused decision was recorded: call_2 is %s", calls[1].Status)
	}
	if _, err := s.Requested(e.ctx, "k3"); !errors.Is(err, store.ErrNotFound) {
		e.e("Requested(k3) = %v, want ErrNotFound", err)
	}
	// A day later the keys are forgotten, and may be used again.
	e.clock.add(store.RequestTTL + time.Second)
	if _, err := s.Requested(e.ctx, "k2"); !errors.Is(err, store.ErrNotFound) {
		e.e("Requested(k2) a day later = %v, want ErrNotFound", err)
	}
	if err := approve("call_2", k2); err != nil {
		e.e("key k2 used again a day later: %v", err)
	}
}

// testRetryVotes: an interrupted call that needed two approvals moves
// to approved on the second retry, by another person; the same person
// twice is refused; one retry leaves it interrupted.
func testRetryVotes(e *env) {
	s := e.handle()
	newRun(e, s, "01A", lease, store.CallApproved)
	if err := s.MoveCall(e.ctx, lease, start("01A", "call_1")); err != nil {
		e.t.Fatal(err)
	}
	e.clock.add(time.Second)
	cut := store.Move{RunID: "01A", CallID: "call_1", From: store.CallExecuting, To: store.CallInterrupted, Kind: store.KindInterrupted, Result: "cut"}
	if err := s.MoveCall(e.ctx, lease, cut); err != nil {
		e.t.Fatal(err)
	}
	retry := func(by string) error {
		_, err := s.Decide(e.ctx, []*store.Decision{{RunID: "01A", CallID: "call_1", Action: store.Retry, By: by, OSUser: by, Needed: 2}}, store.Lease{})
		return err
	}
	status := func() store.CallStatus {
		calls, err := s.Calls(e.ctx, "01A")
		if err != nil {
			e.t.Fatal(err)
		}
		return calls[0].Status
	}
	if err := retry("alice"); err != nil || status() != store.CallInterrupted {
		e.e("a first retry: %v, call %s; want it still interrupted", err, status())
	}
	var fe *store.ForbiddenError
	if err := retry("alice"); !errors.As(err, &fe) || !strings.Contains(fe.Reason, "1 of 2 so far") {
		e.e("alice's second retry: %v; want forbidden, 1 of 2 so far", err)
	}
	if err := retry("bob"); err != nil || status() != store.CallApproved {
		e.e("bob's retry: %v, call %s; want approved", err, status())
	}
}
