package storetest

import (
	"errors"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// A decision counts against the person it names and the principal that
// made it: neither supplies a second approval of one call.
func testOnePrincipal(e *env) {
	s := e.handle()
	suspended(e, s, "01A", 1)
	approve := func(by, principal string) error {
		d := &store.Decision{RunID: "01A", CallID: "call_1", Action: store.Approve, By: by, OSUser: principal, Needed: 3}
		_, err := s.Decide(e.ctx, []*store.Decision{d}, store.Lease{})
		return err
	}
	if err := approve("alice", "bot"); err != nil {
		e.t.Fatal(err)
	}
	for _, again := range [][2]string{{"carol", "bot"}, {"alice", "alice"}, {"bot", "bot"}, {"dave", "alice"}} {
		var fe *store.ForbiddenError
		if err := approve(again[0], again[1]); !errors.As(err, &fe) || fe.CallID != "call_1" {
			e.t.Errorf("approval by %s as %s after bot as alice: %v, want a ForbiddenError", again[1], again[0], err)
		}
	}
	if err := approve("carol", "carol"); err != nil {
		e.t.Errorf("a second person: %v", err)
	}
	if calls, _ := s.Calls(e.ctx, "01A"); calls[0].Approvals != 2 || calls[0].Status != store.CallPending {
		e.t.Errorf("call after two approvals of three: %+v", calls[0])
	}
}

// A stalled run is released, left alone by workers, claimed by whoever
// continues it (its error cleared), and claimed by Settle when its child
// finishes.
func testStalled(e *env) {
	s := e.handle()
	r := newRun(e, s, "01A", lease)
	r.Status, r.Error = store.Stalled, "model down"
	if err := s.Checkpoint(e.ctx, lease, r, nil); err != nil {
		e.t.Fatal(err)
	}
	if got, _ := s.Run(e.ctx, "01A"); got.Owner != "" || got.Status != store.Stalled || got.Error != "model down" {
		e.t.Errorf("stalled run: owner %q, status %s, error %q", got.Owner, got.Status, got.Error)
	}
	e.clock.add(time.Hour)
	if w, err := claimWork(e.ctx, s, store.Lease{Owner: "w", TTL: time.Minute}, ""); err != nil || w != nil {
		e.t.Errorf("a worker claimed a stalled run: %v %v", w, err)
	}
	p2 := store.Lease{Owner: "p2", TTL: time.Minute}
	if err := s.Claim(e.ctx, p2, "01A", store.Stalled); err != nil {
		e.t.Fatal(err)
	}
	if got, _ := s.Run(e.ctx, "01A"); got.Status != store.Running || got.Error != "" {
		e.t.Errorf("claimed stalled run: status %s, error %q", got.Status, got.Error)
	}
}

// A decision keeps via what its decider was identified; "" (the CLI on
// the database) by default.
func testVia(e *env) {
	s := e.handle()
	suspended(e, s, "01A", 2)
	ds := []*store.Decision{
		{RunID: "01A", CallID: "call_1", Action: store.Approve, By: "alice", OSUser: "alice", Via: "token"},
		{RunID: "01A", CallID: "call_2", Action: store.Decline, By: "bob", OSUser: "root"},
	}
	if _, err := s.Decide(e.ctx, ds, store.Lease{}); err != nil {
		e.t.Fatal(err)
	}
	got, err := s.Decisions(e.ctx, "01A")
	if err != nil || len(got) != 2 || got[0].Via != "token" || got[1].Via != "" {
		e.t.Fatalf("decisions %+v, %v", got, err)
	}
}
