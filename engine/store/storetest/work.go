package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// A child run is part of its root's tree; the root's delegation call is
// settled by the child's outcome, claiming the root when it is free.
func testTrees(e *env) {
	s := e.handle()
	root := newRun(e, s, "01A", lease, store.CallApproved)
	err := s.MoveCall(e.ctx, lease, store.Move{RunID: "01A", CallID: "call_1", From: store.CallApproved, To: store.CallPending,
		Kind: store.KindDelegation, Payload: []byte(`{"runId":"01B"}`)})
	if err != nil {
		e.t.Fatal(err)
	}
	child := &store.Run{ID: "01B", Agent: "db_admin", Status: store.Running, SpecHash: "h1", State: []byte("{}"),
		ParentID: "01A", ParentCall: "call_1", RootID: "01A", Path: []string{"oncall", "db_admin"}}
	if err := s.CreateRun(e.ctx, child, []byte("spec"), lease); err != nil {
		e.t.Fatal(err)
	}
	c := &store.Call{ID: "call_1/call_1", Seq: 1, Step: 1, Tool: "drop", Args: []byte("{}"), Status: store.CallPending, Kind: store.KindApproval}
	child.Step = 1
	if err := s.Checkpoint(e.ctx, lease, child, []*store.Call{c}); err != nil {
		e.t.Fatal(err)
	}
	for _, r := range []*store.Run{child, root} {
		if err := s.Suspend(e.ctx, lease, r); err != nil {
			e.t.Fatal(err)
		}
	}
	tree, err := s.Tree(e.ctx, "01A")
	if err != nil || len(tree) != 2 || tree[0].ID != "01A" || tree[1].ParentCall != "call_1" || strings.Join(tree[1].Path, ">") != "oncall>db_admin" {
		e.t.Fatalf("tree %+v, %v", tree, err)
	}
	if alone, err := s.Tree(e.ctx, "01B"); err != nil || len(alone) != 1 || alone[0].ID != "01B" || alone[0].RootID != "01A" {
		e.t.Errorf("tree of a child's id: %+v, %v (want the child alone)", alone, err)
	}
	if none, err := s.Tree(e.ctx, "01Z"); err != nil || len(none) != 0 {
		e.t.Errorf("tree of an unknown id: %+v, %v", none, err)
	}
	if got, _ := s.Run(e.ctx, "01A"); got.RootID != "01A" || got.ParentID != "" {
		e.t.Errorf("root run: %+v", got)
	}
	pending, err := s.TreePending(e.ctx, "01A")
	if err != nil || len(pending) != 1 || pending[0].ID != "call_1/call_1" || pending[0].RunID != "01B" {
		e.t.Fatalf("tree pending %+v, %v (the delegation is not listed)", pending, err)
	}
	if roots, _ := s.List(e.ctx, store.Filter{Roots: true}); len(roots) != 1 || roots[0].ID != "01A" {
		e.t.Errorf("roots: %v", roots)
	}
	p2 := store.Lease{Owner: "p2", TTL: time.Minute}
	claimed, err := s.Settle(e.ctx, p2, store.Move{RunID: "01A", CallID: "call_1", To: store.CallSucceeded, Result: "done"})
	if err != nil || !claimed {
		e.t.Fatalf("settle: claimed=%v, %v", claimed, err)
	}
	if _, err := s.Settle(e.ctx, p2, store.Move{RunID: "01A", CallID: "call_1", To: store.CallFailed}); !errors.Is(err, store.ErrConflict) {
		e.t.Errorf("settling twice: %v, want ErrConflict", err)
	}
}

func testWork(e *env) {
	s := e.handle()
	w := store.Lease{Owner: "w1", TTL: time.Minute}
	if r, err := claimWork(e.ctx, s, w, ""); err != nil || r != nil {
		e.t.Fatalf("an empty queue: %v, %v", r, err)
	}
	// A queued run, created without a lease.
	q := &store.Run{ID: "01Q", Agent: "oncall", Status: store.Queued, Input: "x", SpecHash: "h1", State: []byte(`{}`)}
	if err := s.CreateRun(e.ctx, q, []byte("spec"), store.Lease{}); err != nil {
		e.t.Fatal(err)
	}
	// A suspended run decided detached, and one decided by a process that
	// claimed it (not work).
	suspended(e, s, "01D", 1)
	suspended(e, s, "01E", 1)
	if claimed, err := s.Decide(e.ctx, []*store.Decision{{RunID: "01D", CallID: "call_1", Action: store.Approve, By: "a"}}, store.Lease{}); err != nil || claimed {
		e.t.Fatalf("a detached decision: claimed=%v, %v", claimed, err)
	}
	if r, _ := s.Run(e.ctx, "01D"); r.Status != store.Suspended || r.Owner != "" {
		e.t.Errorf("after a detached decision the run is %s held by %q", r.Status, r.Owner)
	}
	if _, err := s.Decide(e.ctx, []*store.Decision{{RunID: "01E", CallID: "call_1", Action: store.Approve, By: "a"}}, lease); err != nil {
		e.t.Fatal(err)
	}
	// A run held by a live process is not work; one whose lease expired is.
	newRun(e, s, "01L", store.Lease{Owner: "p9", TTL: 30 * time.Minute})
	var got []string
	for {
		r, err := claimWork(e.ctx, s, w, "")
		if err != nil {
			e.t.Fatal(err)
		}
		if r == nil {
			break
		}
		if r.Status != store.Running || r.Owner != "w1" {
			e.t.Errorf("claimed %s is %s held by %q", r.ID, r.Status, r.Owner)
		}
		got = append(got, r.ID)
	}
	slices.Sort(got)
	if strings.Join(got, " ") != "01D 01Q" {
		e.t.Errorf("claimed %v, want the queued run and the detached decision", got)
	}
	e.clock.add(time.Hour)
	if r, err := claimWork(e.ctx, s, store.Lease{Owner: "w2", TTL: time.Minute}, "nope"); err != nil || r != nil {
		e.t.Errorf("work for another agent: %v, %v", r, err)
	}
	r, err := claimWork(e.ctx, s, store.Lease{Owner: "w2", TTL: time.Minute}, "oncall")
	if err != nil || r == nil {
		e.t.Fatalf("runs whose lease expired are work: %v, %v", r, err)
	}
}

func testWorkRace(e *env) {
	const n = 20
	s := e.handle()
	for i := range n {
		q := &store.Run{ID: fmt.Sprintf("01Q%02d", i), Agent: "oncall", Status: store.Queued, Input: "x", SpecHash: "h1", State: []byte(`{}`)}
		if err := s.CreateRun(e.ctx, q, []byte("spec"), store.Lease{}); err != nil {
			e.t.Fatal(err)
		}
	}
	var mu sync.Mutex
	claims := map[string]string{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := e.handle()
			l := store.Lease{Owner: fmt.Sprintf("w%d", w), TTL: time.Minute}
			for {
				r, err := claimWork(e.ctx, h, l, "")
				if err != nil {
					e.t.Error(err)
					return
				}
				if r == nil {
					return
				}
				mu.Lock()
				if prev, ok := claims[r.ID]; ok {
					e.t.Errorf("%s claimed by %s and %s", r.ID, prev, l.Owner)
				}
				claims[r.ID] = l.Owner
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(claims) != n {
		e.t.Errorf("%d runs claimed, want %d", len(claims), n)
	}
}

func testWorkers(e *env) {
	s := e.handle()
	w := store.Worker{ID: "w1", Host: "h", PID: 42, Concurrency: 2, Lease: time.Minute, Started: e.clock.now()}
	if err := s.Beat(e.ctx, w); err != nil {
		e.t.Fatal(err)
	}
	w.Done = 3
	if err := s.Beat(e.ctx, w); err != nil {
		e.t.Fatal(err)
	}
	suspended(e, s, "01A", 2)
	q, err := s.Queue(e.ctx)
	if err != nil || len(q.Workers) != 1 || q.Workers[0].Done != 3 || q.Pending != 2 || q.OldestPending.IsZero() {
		e.t.Fatalf("queue %+v, %v", q, err)
	}
	if !q.Workers[0].Alive(e.clock.now()) || q.Workers[0].Alive(e.clock.now().Add(2*time.Minute)) {
		e.t.Errorf("alive within its lease only: %+v", q.Workers[0])
	}
	if err := s.Gone(e.ctx, "w1"); err != nil {
		e.t.Fatal(err)
	}
	if q, _ := s.Queue(e.ctx); len(q.Workers) != 0 {
		e.t.Errorf("a gone worker is still listed: %+v", q.Workers)
	}
}

// testWorkersAgeOut: a worker that stops beating without saying so
// (SIGKILL) is listed as gone for store.WorkerAgeOut leases, then no
// longer listed; a read deletes nothing, the next heartbeat deletes it.
func testWorkersAgeOut(e *env) {
	s := e.handle()
	lease := time.Minute
	killed := store.Worker{ID: "killed", Host: "h", PID: 42, Concurrency: 1, Lease: lease, Started: e.clock.now()}
	if err := s.Beat(e.ctx, killed); err != nil {
		e.t.Fatal(err)
	}
	ids := func() []string {
		q, err := s.Queue(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		var out []string
		for _, w := range q.Workers {
			out = append(out, w.ID)
		}
		return out
	}
	e.clock.add(store.WorkerAgeOut * lease)
	if got := ids(); len(got) != 1 {
		e.t.Errorf("within %d leases: workers %v, want the gone one listed", store.WorkerAgeOut, got)
	}
	e.clock.add(time.Second)
	if got := ids(); len(got) != 0 {
		e.t.Errorf("after %d leases: workers %v, want none", store.WorkerAgeOut, got)
	}
	// The read deleted nothing: back in time, it is listed again.
	e.clock.add(-time.Minute)
	if got := ids(); len(got) != 1 {
		e.t.Errorf("a read deleted a worker: %v", got)
	}
	e.clock.add(time.Minute)
	live := store.Worker{ID: "live", Host: "h", PID: 43, Concurrency: 1, Lease: lease, Started: e.clock.now()}
	if err := s.Beat(e.ctx, live); err != nil {
		e.t.Fatal(err)
	}
	e.clock.add(-time.Minute)
	if got := ids(); len(got) != 1 || got[0] != "live" {
		e.t.Errorf("after another worker's heartbeat: workers %v, want only live (the aged one deleted)", got)
	}
}

// OldEvents checks that event rows written before store.Event.Data held
// an event's own fields only (behind a '@' mark, or behind the whole
// envelope) read as their own fields once the schema is migrated. put
// writes raw rows into a migrated database and sets its schema back
// before the event migration; reopen opens it again, migrating it.
func OldEvents(t *testing.T, put func(rows [][2]string), reopen func() store.Store) {
	t.Helper()
	put([][2]string{
		{"text-delta", `@{"text":"a"}`},
		{"finish", `@{}`},
		{"text-delta", `{"type":"text-delta","runId":"01OLD","text":"b"}`},
		{"finish", `{"type":"finish","runId":"01OLD"}`},
		{"text-delta", `{"text":"c"}`},
	})
	db := reopen()
	defer db.Close()
	evs, err := db.Events(context.Background(), "01OLD", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		e.At = time.Time{} // stored as 0 by the test: what is compared is the rest
		got = append(got, string(e.JSON()))
	}
	want := []string{
		`{"type":"text-delta","runId":"01OLD","text":"a"}`,
		`{"type":"finish","runId":"01OLD"}`,
		`{"type":"text-delta","runId":"01OLD","text":"b"}`,
		`{"type":"finish","runId":"01OLD"}`,
		`{"type":"text-delta","runId":"01OLD","text":"c"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events after the migration:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Release frees a run its holder stops advancing (a stopped process): the
// next worker claims it at once, without waiting for the lease; a process
// that does not hold the run releases nothing.
func testRelease(e *env) {
	s := e.handle()
	newRun(e, s, "01A", lease)
	p2 := store.Lease{Owner: "p2", TTL: time.Minute}
	if err := s.Release(e.ctx, p2, "01A"); err != nil {
		e.t.Fatal(err)
	}
	if got, _ := s.Run(e.ctx, "01A"); got.Owner != lease.Owner {
		e.t.Fatalf("released by a process that does not hold it: owner %q", got.Owner)
	}
	if err := s.Release(e.ctx, lease, "01A"); err != nil {
		e.t.Fatal(err)
	}
	if got, _ := s.Run(e.ctx, "01A"); got.Owner != "" || got.Status != store.Running {
		e.t.Errorf("after release: owner %q, status %s", got.Owner, got.Status)
	}
	r, err := claimWork(e.ctx, s, p2, "")
	if err != nil || r == nil || r.ID != "01A" {
		e.t.Fatalf("the next worker claims %v, %v; want 01A at once", r, err)
	}
}
