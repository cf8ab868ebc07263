// Package storetest is the contract every store.Store implementation
// passes. A backend's test calls Run with a function that makes a fresh,
// empty database and returns a way to open handles on it; several handles
// stand for several processes.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// Backend makes a fresh empty database whose clock is now and returns a
// function opening a new handle on it. Handles are closed by the caller.
type Backend func(t *testing.T, now func() time.Time) (open func() store.Store)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type env struct {
	t     *testing.T
	ctx   context.Context
	clock *clock
	open  func() store.Store
	// backend makes another fresh database, for a test that needs several.
	backend Backend
}

func (e *env) handle() store.Store {
	s := e.open()
	e.t.Cleanup(func() { s.Close() })
	return s
}

// Run runs the contract against a backend.
func Run(t *testing.T, b Backend) {
	tests := []struct {
		name string
		f    func(e *env)
	}{
		{"CreateAndRead", testCreateAndRead},
		{"ResolveID", testResolveID},
		{"List", testList},
		{"LeaseGuardsWrites", testLeaseGuardsWrites},
		{"SuspendNeedsPendingAndNoApproved", testSuspend},
		{"DecideOnce", testDecideOnce},
		{"ApprovedStaysApproved", testApprovedStaysApproved},
		{"OnePrincipal", testOnePrincipal},
		{"PreviewHold", testPreviewHold},
		{"Stalled", testStalled},
		{"DecideClaims", testDecideClaims},
		{"CallLedger", testCallLedger},
		{"Apply", testApply}, {"DecideStarts", testDecideStarts},
		{"ResultObject", testResultObject},
		{"ConcurrentDecide", testConcurrentDecide},
		{"DecisionKinds", testDecisionKinds},
		{"BatchAllOrNothing", testBatch},
		{"GrantsAndExpiry", testGrantsAndExpiry},
		{"Claim", testClaim},
		{"Release", testRelease},
		{"Events", testEvents},
		{"Trees", testTrees},
		{"ReadTree", testReadTree},
		{"Work", testWork},
		{"WorkRace", testWorkRace},
		{"ClaimStart", testClaimStart}, {"ClaimStartRace", testClaimStartRace}, {"Lapse", testLapse}, {"LapseRace", testLapseRace},
		{"Workers", testWorkers},
		{"WorkersAgeOut", testWorkersAgeOut},
		{"Tokens", testTokens},
		{"Feed", testFeed}, {"FeedAt", testFeedAt},
		{"ListPages", testListPages},
		{"Waiting", testWaiting},
		{"Stats", testStats},
		{"Via", testVia},
		{"NotifyOutbox", testNotifyOutbox},
		{"Sessions", testSessions},
		{"NotifyClaimRace", testNotifyClaimRace},
		{"FirstSeen", testFirstSeen},
		{"PruneCounts", testPruneCounts}, {"PruneKeepsUnended", testPruneKeepsUnended}, {"PruneKeepAudit", testPruneKeepAudit}, {"PruneBatches", testPruneBatches},
		{"Audit", testAudit},
		{"AuditTree", testAuditTree},
		{"AnyText", testAnyText},
		{"Requests", testRequests}, {"RetryVotes", testRetryVotes},
		{"Escalations", testEscalations},
		{"Chain", testChain}, {"ChainTamper", testChainTamper}, {"ChainRace", testChainRace}, {"ChainPrune", testChainPrune},
		{"ChainCheckpoints", testChainCheckpoints},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
			tc.f(&env{t: t, ctx: context.Background(), clock: c, open: b(t, c.now), backend: b})
		})
	}
}

var lease = store.Lease{Owner: "p1", TTL: time.Minute}

func start(runID, callID string) store.Move {
	return store.Move{RunID: runID, CallID: callID, From: store.CallApproved, To: store.CallExecuting}
}

// newRun creates a running run held by l, with calls in the given statuses.
func newRun(e *env, s store.Store, id string, l store.Lease, statuses ...store.CallStatus) *store.Run {
	e.t.Helper()
	r := &store.Run{ID: id, Agent: "oncall", Status: store.Running, Input: "in " + id, SpecHash: "h1", State: []byte(`{}`)}
	if err := s.CreateRun(e.ctx, r, []byte("spec"), l); err != nil {
		e.t.Fatal(err)
	}
	if len(statuses) > 0 {
		var calls []*store.Call
		for i, st := range statuses {
			c := &store.Call{ID: fmt.Sprintf("call_%d", i+1), Seq: i + 1, Step: 1, Tool: "restart", Args: []byte(`{"s":"nginx"}`), Status: st}
			if st == store.CallPending {
				c.Kind = store.KindApproval
			}
			calls = append(calls, c)
		}
		r.Step = 1
		if err := s.Checkpoint(e.ctx, l, r, calls); err != nil {
			e.t.Fatal(err)
		}
	}
	return r
}

// suspended creates a suspended run with pending calls.
func suspended(e *env, s store.Store, id string, n int) *store.Run {
	e.t.Helper()
	st := make([]store.CallStatus, n)
	for i := range st {
		st[i] = store.CallPending
	}
	r := newRun(e, s, id, lease, st...)
	if err := s.Suspend(e.ctx, lease, r); err != nil {
		e.t.Fatal(err)
	}
	return r
}

func testCreateAndRead(e *env) {
	s := e.handle()
	newRun(e, s, "01A", lease)
	newRun(e, s, "01B", lease) // same spec: stored once
	r, err := s.Run(e.ctx, "01A")
	if err != nil {
		e.t.Fatal(err)
	}
	if r.Agent != "oncall" || r.Status != store.Running || r.Input != "in 01A" || string(r.State) != "{}" || !r.CreatedAt.Equal(e.clock.now()) {
		e.t.Errorf("run read back as %+v", r)
	}
	spec, err := s.Spec(e.ctx, "h1")
	if err != nil || string(spec) != "spec" {
		e.t.Errorf("spec = %q, %v", spec, err)
	}
	if _, err := s.Run(e.ctx, "01Z"); !errors.Is(err, store.ErrNotFound) {
		e.t.Errorf("missing run: %v, want ErrNotFound", err)
	}
	if _, err := s.Spec(e.ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		e.t.Errorf("missing spec: %v, want ErrNotFound", err)
	}
}

func testResolveID(e *env) {
	s := e.handle()
	for _, id := range []string{"01AAA", "01AAB", "01BBB"} {
		newRun(e, s, id, lease)
	}
	for prefix, want := range map[string]string{"01B": "01BBB", "01AAB": "01AAB", "01BBB": "01BBB"} {
		if got, err := s.ResolveID(e.ctx, prefix); err != nil || got != want {
			e.t.Errorf("ResolveID(%q) = %q, %v; want %q", prefix, got, err, want)
		}
	}
	var amb *store.AmbiguousError
	if _, err := s.ResolveID(e.ctx, "01A"); !errors.As(err, &amb) || len(amb.Matches) != 2 {
		e.t.Errorf("ResolveID(01A) = %v, want ambiguous with 2 matches", err)
	}
	if _, err := s.ResolveID(e.ctx, "02"); !errors.Is(err, store.ErrNotFound) {
		e.t.Errorf("ResolveID(02) = %v, want ErrNotFound", err)
	}
}

func testList(e *env) {
	s := e.handle()
	suspended(e, s, "01A", 1)
	newRun(e, s, "01B", lease)
	r := &store.Run{ID: "01C", Agent: "other", Status: store.Running, SpecHash: "h1", State: []byte(`{}`)}
	if err := s.CreateRun(e.ctx, r, []byte("spec"), lease); err != nil {
		e.t.Fatal(err)
	}
	ids := func(f store.Filter) string {
		rs, err := s.List(e.ctx, f)
		if err != nil {
			e.t.Fatal(err)
		}
		var out string
		for _, r := range rs {
			out += r.ID + " "
		}
		return out
	}
	for _, tc := range []struct {
		f    store.Filter
		want string
	}{
		{store.Filter{}, "01C 01B 01A "},
		{store.Filter{Status: store.Suspended}, "01A "},
		{store.Filter{Agent: "other"}, "01C "},
		{store.Filter{Limit: 2}, "01C 01B "},
		{store.Filter{Status: store.Completed}, ""},
	} {
		if got := ids(tc.f); got != tc.want {
			e.t.Errorf("List(%+v) = %q, want %q", tc.f, got, tc.want)
		}
	}
	p, err := s.Pending(e.ctx, []string{"01A", "01B"})
	if err != nil || len(p["01A"]) != 1 || len(p["01B"]) != 0 || p["01A"][0].Kind != store.KindApproval {
		e.t.Errorf("Pending = %v, %v", p, err)
	}
}

func testLeaseGuardsWrites(e *env) {
	s := e.handle()
	r := newRun(e, s, "01A", lease, store.CallApproved)
	other := store.Lease{Owner: "p2", TTL: time.Minute}
	r.Step = 2
	if err := s.Checkpoint(e.ctx, other, r, nil); !errors.Is(err, store.ErrLeaseLost) {
		e.t.Errorf("Checkpoint by a non-holder: %v, want ErrLeaseLost", err)
	}
	if err := s.MoveCall(e.ctx, other, start("01A", "call_1")); !errors.Is(err, store.ErrLeaseLost) {
		e.t.Errorf("StartCall by a non-holder: %v, want ErrLeaseLost", err)
	}
	if err := s.Renew(e.ctx, other, "01A"); !errors.Is(err, store.ErrLeaseLost) {
		e.t.Errorf("Renew by a non-holder: %v, want ErrLeaseLost", err)
	}
	if err := s.Renew(e.ctx, lease, "01A"); err != nil {
		e.t.Errorf("Renew by the holder: %v", err)
	}
	// A terminal checkpoint releases the lease.
	r.Status, r.Output = store.Completed, "done"
	r.Usage = store.Usage{ModelCalls: 2, InputTokens: 30, OutputTokens: 12}
	if err := s.Checkpoint(e.ctx, lease, r, nil); err != nil {
		e.t.Fatal(err)
	}
	if err := s.Renew(e.ctx, lease, "01A"); !errors.Is(err, store.ErrLeaseLost) {
		e.t.Errorf("Renew after completion: %v, want ErrLeaseLost", err)
	}
	got, _ := s.Run(e.ctx, "01A")
	if got.Status != store.Completed || got.Output != "done" || got.Step != 2 || got.Usage != r.Usage {
		e.t.Errorf("run after checkpoint: %+v", got)
	}
}

func testSuspend(e *env) {
	s := e.handle()
	a := newRun(e, s, "01A", lease, store.CallSucceeded)
	if err := s.Suspend(e.ctx, lease, a); !errors.Is(err, store.ErrNotIdle) {
		e.t.Errorf("Suspend without a pending call: %v, want ErrNotIdle", err)
	}
	b := newRun(e, s, "01B", lease, store.CallPending, store.CallApproved)
	if err := s.Suspend(e.ctx, lease, b); !errors.Is(err, store.ErrNotIdle) {
		e.t.Errorf("Suspend with an approved call: %v, want ErrNotIdle", err)
	}
	c := newRun(e, s, "01C", lease, store.CallPending, store.CallSucceeded)
	if err := s.Suspend(e.ctx, lease, c); err != nil {
		e.t.Fatalf("Suspend: %v", err)
	}
	if r, _ := s.Run(e.ctx, "01C"); r.Status != store.Suspended || c.Status != store.Suspended || !r.UpdatedAt.Equal(c.UpdatedAt) {
		e.t.Errorf("status %s (in memory %s, updated %v and %v), want suspended", r.Status, c.Status, r.UpdatedAt, c.UpdatedAt)
	}
	if err := s.Renew(e.ctx, lease, "01C"); !errors.Is(err, store.ErrLeaseLost) {
		e.t.Errorf("Suspend kept the lease: %v", err)
	}
}

func testDecideOnce(e *env) {
	s := e.handle()
	suspended(e, s, "01A", 2)
	d := &store.Decision{RunID: "01A", CallID: "call_1", Action: store.Decline, By: "alice", OSUser: "root", Reason: "no", Result: "declined: no"}
	if _, err := s.Decide(e.ctx, []*store.Decision{d}, lease); err != nil {
		e.t.Fatal(err)
	}
	e.clock.add(time.Second)
	again := &store.Decision{RunID: "01A", CallID: "call_1", Action: store.Approve, By: "bob", OSUser: "bob"}
	_, err := s.Decide(e.ctx, []*store.Decision{again}, store.Lease{Owner: "p2", TTL: time.Minute})
	var ce *store.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, store.ErrConflict) {
		e.t.Fatalf("second decision: %v, want a ConflictError", err)
	}
	if ce.Status != store.CallDeclined || ce.Action != store.Decline || ce.By != "alice" {
		e.t.Errorf("conflict %+v: want declined by alice", ce)
	}
	_, err = s.Decide(e.ctx, []*store.Decision{{RunID: "01A", CallID: "call_9", Action: store.Approve}}, lease)
	if !errors.As(err, &ce) || ce.Status != "" {
		e.t.Errorf("unknown call: %v, want a ConflictError without status", err)
	}
	calls, _ := s.Calls(e.ctx, "01A")
	if calls[0].Status != store.CallDeclined || calls[0].Result != "declined: no" || calls[1].Status != store.CallPending {
		e.t.Errorf("calls after decisions: %+v %+v", calls[0], calls[1])
	}
	ds, _ := s.Decisions(e.ctx, "01A")
	if len(ds) != 1 || ds[0].By != "alice" || ds[0].OSUser != "root" || ds[0].Reason != "no" || ds[0].Action != store.Decline {
		e.t.Errorf("decisions: %+v", ds)
	}
}

// An approved call is decided: a decline or an expiry after it is a
// conflict, and the call stays approved.
func testApprovedStaysApproved(e *env) {
	s := e.handle()
	suspended(e, s, "01A", 1)
	ok := &store.Decision{RunID: "01A", CallID: "call_1", Action: store.Approve, By: "alice", OSUser: "alice"}
	if _, err := s.Decide(e.ctx, []*store.Decision{ok}, store.Lease{}); err != nil {
		e.t.Fatal(err)
	}
	for _, late := range []*store.Decision{
		{RunID: "01A", CallID: "call_1", Action: store.Decline, By: "bob", OSUser: "bob", Result: "declined"},
		{RunID: "01A", CallID: "call_1", Action: store.Expire, By: "agentctl", OSUser: "agentctl", Result: "expired"},
	} {
		_, err := s.Decide(e.ctx, []*store.Decision{late}, store.Lease{})
		var ce *store.ConflictError
		if !errors.As(err, &ce) || ce.Status != store.CallApproved || ce.Action != store.Approve || ce.By != "alice" {
			e.t.Errorf("%s after an approval: %v, want a conflict naming the approval", late.Action, err)
		}
	}
	calls, _ := s.Calls(e.ctx, "01A")
	if calls[0].Status != store.CallApproved {
		e.t.Errorf("call after late decisions: %s, want approved", calls[0].Status)
	}
}

func testDecideClaims(e *env) {
	s := e.handle()
	suspended(e, s, "01A", 2)
	p2 := store.Lease{Owner: "p2", TTL: time.Minute}
	claimed, err := s.Decide(e.ctx, []*store.Decision{{RunID: "01A", CallID: "call_1", Action: store.Approve, By: "a"}}, p2)
	if err != nil || !claimed {
		e.t.Fatalf("deciding a suspended run: claimed=%v, %v; want the claim", claimed, err)
	}
	if r, _ := s.Run(e.ctx, "01A"); r.Status != store.Running {
		e.t.Errorf("claimed run is %s, want running", r.Status)
	}
	// While p2 holds the run, p3's decision is recorded but not claimed.
	p3 := store.Lease{Owner: "p3", TTL: time.Minute}
	claimed, err = s.Decide(e.ctx, []*store.Decision{{RunID: "01A", CallID: "call_2", Action: store.Approve, By: "b"}}, p3)
	if err != nil || claimed {
		e.t.Fatalf("deciding a held run: claimed=%v, %v; want recorded, not claimed", claimed, err)
	}
	// A holder that stops renewing loses the run to the next decider.
	newRun(e, s, "01B", p2, store.CallPending, store.CallPending)
	e.clock.add(2 * time.Minute)
	claimed, err = s.Decide(e.ctx, []*store.Decision{{RunID: "01B", CallID: "call_1", Action: store.Approve, By: "c"}}, p3)
	if err != nil || !claimed {
		e.t.Fatalf("deciding a run whose lease expired: claimed=%v, %v; want the claim", claimed, err)
	}
	if err := s.Renew(e.ctx, p2, "01B"); !errors.Is(err, store.ErrLeaseLost) {
		e.t.Errorf("the old holder can still renew: %v", err)
	}
}

func testCallLedger(e *env) {
	s := e.handle()
	newRun(e, s, "01A", lease, store.CallPending, store.CallApproved)
	if err := s.MoveCall(e.ctx, lease, start("01A", "call_1")); !errors.Is(err, store.ErrConflict) {
		e.t.Errorf("starting a pending call: %v, want ErrConflict", err)
	}
	if err := s.MoveCall(e.ctx, lease, start("01A", "call_2")); err != nil {
		e.t.Fatal(err)
	}
	if err := s.MoveCall(e.ctx, lease, start("01A", "call_2")); !errors.Is(err, store.ErrConflict) {
		e.t.Errorf("starting a call twice: %v, want ErrConflict", err)
	}
	finish := store.Move{RunID: "01A", CallID: "call_2", From: store.CallExecuting, To: store.CallSucceeded, Result: "ok"}
	if err := s.MoveCall(e.ctx, lease, finish, store.Event{RunID: "01A", Type: "tool-result"}); err != nil {
		e.t.Fatal(err)
	}
	finish.To, finish.Result = store.CallFailed, "again"
	if err := s.MoveCall(e.ctx, lease, finish, store.Event{RunID: "01A", Type: "tool-result"}); !errors.Is(err, store.ErrConflict) {
		e.t.Errorf("finishing a call twice: %v, want ErrConflict", err)
	}
	if evs, _ := s.Events(e.ctx, "01A", 0); len(evs) != 1 {
		e.t.Errorf("%d events, want 1: a failed transition writes none", len(evs))
	}
	calls, _ := s.Calls(e.ctx, "01A")
	if c := calls[1]; c.Status != store.CallSucceeded || c.Result != "ok" || string(c.Args) != `{"s":"nginx"}` {
		e.t.Errorf("call after finishing: %+v", c)
	}
}

// Many handles (processes) decide the same calls at once: each call gets
// exactly one decision.
func testConcurrentDecide(e *env) {
	const handles, calls = 4, 10
	s := e.handle()
	suspended(e, s, "01A", calls)
	var wins, conflicts atomic.Int32
	var wg sync.WaitGroup
	for h := range handles {
		hs := e.handle()
		l := store.Lease{Owner: fmt.Sprintf("h%d", h), TTL: time.Minute}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range calls {
				d := &store.Decision{RunID: "01A", CallID: fmt.Sprintf("call_%d", c+1), Action: store.Approve, By: l.Owner}
				_, err := hs.Decide(e.ctx, []*store.Decision{d}, l)
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, store.ErrConflict):
					conflicts.Add(1)
				default:
					e.t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if wins.Load() != calls || conflicts.Load() != calls*(handles-1) {
		e.t.Errorf("%d wins and %d conflicts; want %d and %d", wins.Load(), conflicts.Load(), calls, calls*(handles-1))
	}
	ds, _ := s.Decisions(e.ctx, "01A")
	if len(ds) != calls {
		e.t.Errorf("%d decisions recorded, want %d", len(ds), calls)
	}
}

// Approve needs a call waiting for approval and Resume one that suspended
// itself; a suspended call carries its payload and deadline.
func testDecisionKinds(e *env) {
	s := e.handle()
	r := newRun(e, s, "01A", lease, store.CallApproved, store.CallPending)
	deadline := e.clock.now().Add(time.Hour)
	err := s.MoveCall(e.ctx, lease, store.Move{RunID: "01A", CallID: "call_1", From: store.CallApproved, To: store.CallPending,
		Kind: store.KindSuspend, Payload: []byte(`{"message":"ticket?"}`), Deadline: deadline})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := s.Suspend(e.ctx, lease, r); err != nil {
		e.t.Fatal(err)
	}
	calls, _ := s.Calls(e.ctx, "01A")
	if c := calls[0]; c.Kind != store.KindSuspend || string(c.Payload) != `{"message":"ticket?"}` || !c.Deadline.Equal(deadline) {
		e.t.Errorf("suspended call: %+v", c)
	}
	var ce *store.ConflictError
	_, err = s.Decide(e.ctx, []*store.Decision{{RunID: "01A", CallID: "call_1", Action: store.Approve, By: "a"}}, lease)
	if !errors.As(err, &ce) || ce.Kind != store.KindSuspend || !strings.Contains(err.Error(), "resume") {
		e.t.Errorf("approving a suspended call: %v", err)
	}
	_, err = s.Decide(e.ctx, []*store.Decision{{RunID: "01A", CallID: "call_2", Action: store.Resume, By: "a", Data: []byte(`{}`)}}, lease)
	if !errors.As(err, &ce) || ce.Kind != store.KindApproval {
		e.t.Errorf("resuming a call waiting for approval: %v", err)
	}
	_, err = s.Decide(e.ctx, []*store.Decision{
		{RunID: "01A", CallID: "call_1", Action: store.Resume, By: "a", Data: []byte(`{"ticket":"CHG-1"}`)},
		{RunID: "01A", CallID: "call_2", Action: store.Approve, By: "a", ArgsBefore: []byte(`{"s":"nginx"}`), ArgsAfter: []byte(`{"s":"apache"}`)},
	}, lease)
	if err != nil {
		e.t.Fatal(err)
	}
	calls, _ = s.Calls(e.ctx, "01A")
	if c := calls[0]; c.Status != store.CallApproved || string(c.Resume) != `{"ticket":"CHG-1"}` || !c.Deadline.IsZero() {
		e.t.Errorf("resumed call: %+v", c)
	}
	if c := calls[1]; c.Status != store.CallApproved || string(c.Args) != `{"s":"apache"}` {
		e.t.Errorf("approved call with edited arguments: %+v", c)
	}
	ds, _ := s.Decisions(e.ctx, "01A")
	if len(ds) != 2 || string(ds[0].Data) != `{"ticket":"CHG-1"}` || string(ds[1].ArgsBefore) != `{"s":"nginx"}` || string(ds[1].ArgsAfter) != `{"s":"apache"}` {
		e.t.Errorf("decisions: %+v %+v", ds[0], ds[1])
	}
}

func testBatch(e *env) {
	s := e.handle()
	suspended(e, s, "01A", 3)
	if _, err := s.Decide(e.ctx, []*store.Decision{{RunID: "01A", CallID: "call_2", Action: store.Decline, By: "a", Result: "no"}}, lease); err != nil {
		e.t.Fatal(err)
	}
	// call_2 is decided: a batch including it changes nothing at all.
	_, err := s.Decide(e.ctx, []*store.Decision{
		{RunID: "01A", CallID: "call_1", Action: store.Approve, By: "b"},
		{RunID: "01A", CallID: "call_2", Action: store.Approve, By: "b"},
		{RunID: "01A", CallID: "call_3", Action: store.Approve, By: "b"},
	}, lease, store.Event{RunID: "01A", Type: "x"})
	if !errors.Is(err, store.ErrConflict) {
		e.t.Fatalf("batch with a decided call: %v, want ErrConflict", err)
	}
	calls, _ := s.Calls(e.ctx, "01A")
	if calls[0].Status != store.CallPending || calls[2].Status != store.CallPending {
		e.t.Errorf("a failed batch changed calls: %s %s", calls[0].Status, calls[2].Status)
	}
	if ds, _ := s.Decisions(e.ctx, "01A"); len(ds) != 1 {
		e.t.Errorf("%d decisions after a failed batch, want 1", len(ds))
	}
	if evs, _ := s.Events(e.ctx, "01A", 0); len(evs) != 0 {
		e.t.Errorf("a failed batch wrote %d events", len(evs))
	}
}

func testGrantsAndExpiry(e *env) {
	s := e.handle()
	suspended(e, s, "01A", 2)
	_, err := s.Decide(e.ctx, []*store.Decision{
		{RunID: "01A", CallID: "call_1", Action: store.Approve, By: "a"},
		{RunID: "01A", CallID: "call_1", Action: store.Grant, By: "a"},
	}, lease)
	if err != nil {
		e.t.Fatal(err)
	}
	if g, err := s.Grants(e.ctx, "01A"); err != nil || len(g) != 1 || g[0] != "restart" {
		e.t.Errorf("grants %v, %v", g, err)
	}
	r := newRun(e, s, "01B", lease, store.CallApproved)
	err = s.MoveCall(e.ctx, lease, store.Move{RunID: "01B", CallID: "call_1", From: store.CallApproved, To: store.CallPending,
		Kind: store.KindSuspend, Deadline: e.clock.now().Add(time.Minute)})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := s.Suspend(e.ctx, lease, r); err != nil {
		e.t.Fatal(err)
	}
	if ids, _ := s.Expired(e.ctx, e.clock.now()); len(ids) != 0 {
		e.t.Errorf("expired before the deadline: %v", ids)
	}
	if ids, _ := s.Expired(e.ctx, e.clock.now().Add(2*time.Minute)); len(ids) != 1 || ids[0] != "01B" {
		e.t.Errorf("expired after the deadline: %v, want [01B]", ids)
	}
}

func testClaim(e *env) {
	s := e.handle()
	r := newRun(e, s, "01A", lease)
	p2 := store.Lease{Owner: "p2", TTL: time.Minute}
	if err := s.Claim(e.ctx, p2, "01A", store.Completed, store.Suspended); !errors.Is(err, store.ErrConflict) {
		e.t.Errorf("claiming a running run: %v, want ErrConflict", err)
	}
	r.Status, r.Output = store.Completed, "done"
	if err := s.Checkpoint(e.ctx, lease, r, nil); err != nil {
		e.t.Fatal(err)
	}
	if err := s.Claim(e.ctx, p2, "01A", store.Suspended); !errors.Is(err, store.ErrConflict) {
		e.t.Errorf("claiming a completed run as suspended: %v, want ErrConflict", err)
	}
	if err := s.Claim(e.ctx, p2, "01A", store.Completed); err != nil {
		e.t.Fatal(err)
	}
	if got, _ := s.Run(e.ctx, "01A"); got.Status != store.Running {
		e.t.Errorf("claimed run is %s", got.Status)
	}
	if err := s.Renew(e.ctx, p2, "01A"); err != nil {
		e.t.Errorf("the claimer does not hold the run: %v", err)
	}
	if err := s.Claim(e.ctx, lease, "01Z", store.Completed); !errors.Is(err, store.ErrNotFound) {
		e.t.Errorf("claiming a missing run: %v", err)
	}
}

func testEvents(e *env) {
	s := e.handle()
	r := newRun(e, s, "01A", lease)
	newRun(e, s, "01B", lease)
	r.Step = 1
	written := []store.Event{{RunID: "01A", Type: "text-delta", Data: []byte(`{"text":"hi"}`)}, {RunID: "01A", Type: "step-finish"}}
	if err := s.Checkpoint(e.ctx, lease, r, nil, written...); err != nil {
		e.t.Fatal(err)
	}
	if err := s.Checkpoint(e.ctx, lease, &store.Run{ID: "01B", Status: store.Running, State: []byte("{}")}, nil,
		store.Event{RunID: "01B", Type: "other"}); err != nil {
		e.t.Fatal(err)
	}
	evs, err := s.Events(e.ctx, "01A", 0)
	if err != nil || len(evs) != 2 || evs[0].Type != "text-delta" || string(evs[0].Data) != `{"text":"hi"}` || string(evs[1].Data) != "{}" {
		e.t.Fatalf("events %v, %v", evs, err)
	}
	// The writer's events are stamped as stored.
	for i, w := range written {
		if w.At.IsZero() || !w.At.Equal(evs[i].At) {
			e.t.Errorf("event %d written with At %v, stored with %v", i, w.At, evs[i].At)
		}
	}
	if more, _ := s.Events(e.ctx, "01A", evs[0].ID); len(more) != 1 || more[0].Type != "step-finish" {
		e.t.Errorf("events after the first: %v", more)
	}
}
