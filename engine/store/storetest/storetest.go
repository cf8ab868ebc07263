// Package storetest is the contract every store.Store implementation
// passes. A backend's test calls Run with a function that makes a fresh,
// empty database and returns a way to open handles on it; several handles
// stand for several processes.
package storetest

import (
	"context"
	"errors"
	"fmt"
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
		{"DecideClaims", testDecideClaims},
		{"CallLedger", testCallLedger},
		{"ConcurrentDecide", testConcurrentDecide},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
			tc.f(&env{t: t, ctx: context.Background(), clock: c, open: b(t, c.now)})
		})
	}
}

var lease = store.Lease{Owner: "p1", TTL: time.Minute}

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
	if err := s.StartCall(e.ctx, other, "01A", "call_1"); !errors.Is(err, store.ErrLeaseLost) {
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
	if err := s.Checkpoint(e.ctx, lease, r, nil); err != nil {
		e.t.Fatal(err)
	}
	if err := s.Renew(e.ctx, lease, "01A"); !errors.Is(err, store.ErrLeaseLost) {
		e.t.Errorf("Renew after completion: %v, want ErrLeaseLost", err)
	}
	got, _ := s.Run(e.ctx, "01A")
	if got.Status != store.Completed || got.Output != "done" || got.Step != 2 {
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
	if _, err := s.Decide(e.ctx, d, lease); err != nil {
		e.t.Fatal(err)
	}
	e.clock.add(time.Second)
	again := &store.Decision{RunID: "01A", CallID: "call_1", Action: store.Approve, By: "bob", OSUser: "bob"}
	_, err := s.Decide(e.ctx, again, store.Lease{Owner: "p2", TTL: time.Minute})
	var ce *store.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, store.ErrConflict) {
		e.t.Fatalf("second decision: %v, want a ConflictError", err)
	}
	if ce.Status != store.CallDeclined || ce.Action != store.Decline || ce.By != "alice" {
		e.t.Errorf("conflict %+v: want declined by alice", ce)
	}
	_, err = s.Decide(e.ctx, &store.Decision{RunID: "01A", CallID: "call_9", Action: store.Approve}, lease)
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

func testDecideClaims(e *env) {
	s := e.handle()
	suspended(e, s, "01A", 2)
	p2 := store.Lease{Owner: "p2", TTL: time.Minute}
	claimed, err := s.Decide(e.ctx, &store.Decision{RunID: "01A", CallID: "call_1", Action: store.Approve, By: "a"}, p2)
	if err != nil || !claimed {
		e.t.Fatalf("deciding a suspended run: claimed=%v, %v; want the claim", claimed, err)
	}
	if r, _ := s.Run(e.ctx, "01A"); r.Status != store.Running {
		e.t.Errorf("claimed run is %s, want running", r.Status)
	}
	// While p2 holds the run, p3's decision is recorded but not claimed.
	p3 := store.Lease{Owner: "p3", TTL: time.Minute}
	claimed, err = s.Decide(e.ctx, &store.Decision{RunID: "01A", CallID: "call_2", Action: store.Approve, By: "b"}, p3)
	if err != nil || claimed {
		e.t.Fatalf("deciding a held run: claimed=%v, %v; want recorded, not claimed", claimed, err)
	}
	// A holder that stops renewing loses the run to the next decider.
	newRun(e, s, "01B", p2, store.CallPending, store.CallPending)
	e.clock.add(2 * time.Minute)
	claimed, err = s.Decide(e.ctx, &store.Decision{RunID: "01B", CallID: "call_1", Action: store.Approve, By: "c"}, p3)
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
	if err := s.StartCall(e.ctx, lease, "01A", "call_1"); !errors.Is(err, store.ErrConflict) {
		e.t.Errorf("starting a pending call: %v, want ErrConflict", err)
	}
	if err := s.StartCall(e.ctx, lease, "01A", "call_2"); err != nil {
		e.t.Fatal(err)
	}
	if err := s.StartCall(e.ctx, lease, "01A", "call_2"); !errors.Is(err, store.ErrConflict) {
		e.t.Errorf("starting a call twice: %v, want ErrConflict", err)
	}
	if err := s.FinishCall(e.ctx, lease, "01A", "call_2", store.CallSucceeded, "ok"); err != nil {
		e.t.Fatal(err)
	}
	if err := s.FinishCall(e.ctx, lease, "01A", "call_2", store.CallFailed, "again"); !errors.Is(err, store.ErrConflict) {
		e.t.Errorf("finishing a call twice: %v, want ErrConflict", err)
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
				_, err := hs.Decide(e.ctx, d, l)
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
