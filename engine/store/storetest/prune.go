package storetest

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// The retention cases (store.Pruner). Old runs are made at the clock's
// start, the clock then moves on by pruneAge, and prunes cut 30 days
// back from there.

const pruneAge = 40 * 24 * time.Hour

func pruner(e *env) (store.Store, store.Pruner) {
	e.t.Helper()
	s := e.handle()
	p, ok := s.(store.Pruner)
	if !ok {
		e.t.Fatal("the store is not a store.Pruner")
	}
	return s, p
}

// cutoff is 30 days before now.
func (e *env) cutoff() time.Time { return e.clock.now().Add(-30 * 24 * time.Hour) }

// endedRun makes a run that ends with status, under spec: one call,
// approved by alice and run; three events; one decision. A child (a
// parent given) joins its parent's tree.
func endedRun(e *env, s store.Store, id, parent, spec string, status store.Status) *store.Run {
	e.t.Helper()
	r := &store.Run{ID: id, Agent: "oncall", Status: store.Running, Input: "in " + id, SpecHash: spec, State: []byte(`{}`), StartedBy: "carol"}
	if parent != "" {
		r.Agent, r.ParentID, r.ParentCall, r.RootID = "db", parent, "call_1", parent
		r.Path = []string{"oncall", "lead", "db"} // as if below a supervisor lead: a path the tombstone keeps
	}
	must(e, s.CreateRun(e.ctx, r, []byte("spec "+spec), lease))
	c := &store.Call{ID: "call_1", Seq: 1, Step: 1, Tool: "restart", Args: []byte(`{"s":"nginx"}`), Status: store.CallPending, Kind: store.KindApproval}
	r.Step = 1
	must(e, s.Checkpoint(e.ctx, lease, r, []*store.Call{c}, store.Event{RunID: id, Type: "tool-call"}))
	must(e, s.Suspend(e.ctx, lease, r))
	_, err := s.Decide(e.ctx, []*store.Decision{{RunID: id, CallID: "call_1", Action: store.Approve, By: "alice", OSUser: "alice", Reason: "ok " + id}}, lease)
	must(e, err)
	must(e, s.MoveCall(e.ctx, lease, start(id, "call_1")))
	must(e, s.MoveCall(e.ctx, lease, store.Move{RunID: id, CallID: "call_1", From: store.CallExecuting, To: store.CallSucceeded, Result: "ok"},
		store.Event{RunID: id, Type: "tool-result"}))
	r.Status = status
	must(e, s.Checkpoint(e.ctx, lease, r, nil, store.Event{RunID: id, Type: "finish"}))
	return r
}

func must(e *env, err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// gone reports whether a run and its rows are gone.
func gone(e *env, s store.Store, id string) bool {
	e.t.Helper()
	_, err := s.Run(e.ctx, id)
	calls, _ := s.Calls(e.ctx, id)
	evs, _ := s.Events(e.ctx, id, 0)
	ds, _ := s.Decisions(e.ctx, id)
	return errors.Is(err, store.ErrNotFound) && len(calls)+len(evs)+len(ds) == 0
}

// A prune deletes the old ended trees, whole, with their calls, events,
// decisions and notifications, and the spec snapshots left unused; a dry
// run counts the same and changes nothing; a prune that matches nothing
// is no error.
func testPruneCounts(e *env) {
	s, p := pruner(e)
	if _, err := p.Prune(e.ctx, store.PruneOptions{}); err == nil {
		e.e("a prune without a cutoff: no error")
	}
	endedRun(e, s, "01A", "", "old", store.Completed)
	endedRun(e, s, "01B", "", "old", store.Failed)
	endedRun(e, s, "01T", "", "h1", store.Completed)
	endedRun(e, s, "01TC", "01T", "h1", store.Completed) // a child: the tree goes whole
	ns, ok := s.(store.NotifyStore)
	if !ok {
		e.t.Fatal("the store is not a store.NotifyStore")
	}
	notice := func(id, run string, st store.NotificationStatus) *store.Notification {
		return &store.Notification{ID: id, Source: store.SourceServer, Type: "completed", RunID: run, Target: []byte(`{}`), Message: []byte(`{}`), Status: st}
	}
	must(e, ns.Enqueue(e.ctx, store.SourceServer, "", "1", []*store.Notification{notice("n1", "01A", store.NotifyDelivered), notice("n2", "01TC", store.NotifyPending)}))
	e.clock.add(pruneAge)
	live := suspended(e, s, "01L", 1)                 // spec h1: kept
	endedRun(e, s, "01L2", "", "h1", store.Completed) // recent: kept, with the newest event
	must(e, ns.Enqueue(e.ctx, store.SourceServer, "1", "2", []*store.Notification{notice("n3", "01L", store.NotifyPending)}))
	if c, err := p.Prune(e.ctx, store.PruneOptions{Before: e.clock.now().Add(-pruneAge - time.Hour)}); err != nil || c.Runs != 0 || c.Specs != 0 {
		e.e("a prune before everything: %+v, %v (want nothing pruned)", c, err)
	}

	dry, err := p.Prune(e.ctx, store.PruneOptions{Before: e.cutoff(), DryRun: true})
	want := store.PruneCounts{Runs: 4, Calls: 4, Events: 12, Decisions: 4, Notifications: 2, Specs: 1}
	if err != nil || dry != want {
		e.t.Fatalf("dry run: %+v, %v; want %+v", dry, err, want)
	}
	for _, id := range []string{"01A", "01B", "01T", "01TC"} {
		if gone(e, s, id) {
			e.t.Fatalf("a dry run deleted run %s", id)
		}
	}
	if _, err := s.Spec(e.ctx, "old"); err != nil {
		e.e("a dry run deleted a spec: %v", err)
	}

	got, err := p.Prune(e.ctx, store.PruneOptions{Before: e.cutoff()})
	want.Batches = 1
	if err != nil || got != want {
		e.t.Fatalf("prune: %+v, %v; want %+v (as the dry run counted, in one batch)", got, err, want)
	}
	for _, id := range []string{"01A", "01B", "01T", "01TC"} {
		if !gone(e, s, id) {
			e.e("run %s or some of its rows are still there", id)
		}
	}
	if _, err := s.Spec(e.ctx, "old"); !errors.Is(err, store.ErrNotFound) {
		e.e("the spec no run uses any more: %v, want ErrNotFound", err)
	}
	if _, err := s.Spec(e.ctx, "h1"); err != nil {
		e.e("the spec the live run uses: %v", err)
	}
	if left, err := ns.Notifications(e.ctx, store.NotificationFilter{}); err != nil || len(left) != 1 || left[0].ID != "n3" {
		e.e("notifications left: %+v, %v (want the live run's alone)", left, err)
	}
	if r, err := s.Run(e.ctx, live.ID); err != nil || r.Status != store.Suspended {
		e.e("the live run: %+v, %v", r, err)
	}
	if again, err := p.Prune(e.ctx, store.PruneOptions{Before: e.cutoff()}); err != nil || again != (store.PruneCounts{}) {
		e.e("a second prune: %+v, %v (want nothing)", again, err)
	}
	if before, after, err := p.Vacuum(e.ctx); err != nil || before <= 0 || after <= 0 {
		e.e("vacuum: %d bytes before, %d after, %v", before, after, err)
	}
	if r, err := s.Run(e.ctx, live.ID); err != nil || r.Status != store.Suspended {
		e.e("the live run after a vacuum: %+v, %v", r, err)
	}
}

// A tree is kept whole while any of its runs has not ended (queued,
// running, suspended, stalled: the root or a child), or ended after the
// cutoff; its runs go on working afterwards.
func testPruneKeepsUnended(e *env) {
	s, p := pruner(e)
	endedRun(e, s, "01D", "", "h1", store.Completed) // the one tree pruned
	endedRun(e, s, "01R", "", "h1", store.Completed) // a completed root with a suspended child
	child(e, s, "01RC", "01R", store.Suspended)
	endedRun(e, s, "01N", "", "h1", store.Completed) // with a running child and a completed one
	child(e, s, "01NC", "01N", store.Running)
	endedRun(e, s, "01NC2", "01N", "h1", store.Completed)
	suspended(e, s, "01P", 1) // a suspended root with a completed child
	endedRun(e, s, "01PC", "01P", "h1", store.Completed)
	endedRun(e, s, "01M", "", "h1", store.Completed) // its child ends after the cutoff
	newRun(e, s, "01U", lease)                       // running
	suspended(e, s, "01S", 1)
	must(e, s.CreateRun(e.ctx, &store.Run{ID: "01Q", Agent: "oncall", Status: store.Queued, SpecHash: "h1", State: []byte(`{}`)}, []byte("spec"), store.Lease{}))
	stalled := newRun(e, s, "01X", lease)
	stalled.Status = store.Stalled
	must(e, s.Checkpoint(e.ctx, lease, stalled, nil))
	e.clock.add(pruneAge)
	endedRun(e, s, "01MC", "01M", "h1", store.Completed)
	endedRun(e, s, "01L", "", "h1", store.Completed)

	dry, err := p.Prune(e.ctx, store.PruneOptions{Before: e.cutoff(), DryRun: true})
	if err != nil || dry.Runs != 1 {
		e.e("dry run: %+v, %v (want 01D alone)", dry, err)
	}
	got, err := p.Prune(e.ctx, store.PruneOptions{Before: e.cutoff()})
	if err != nil || got.Runs != 1 || !gone(e, s, "01D") {
		e.t.Fatalf("prune: %+v, %v (want 01D alone pruned)", got, err)
	}
	for _, id := range []string{"01R", "01RC", "01N", "01NC", "01NC2", "01P", "01PC", "01M", "01MC", "01U", "01S", "01Q", "01X", "01L"} {
		if _, err := s.Run(e.ctx, id); err != nil {
			e.e("run %s: %v (it should have been kept)", id, err)
		}
		if calls, err := s.Calls(e.ctx, id); err != nil || len(calls) == 0 && id != "01NC" && id != "01U" && id != "01Q" && id != "01X" {
			e.e("calls of run %s: %v, %v", id, calls, err)
		}
	}
	if _, err := s.Decide(e.ctx, []*store.Decision{{RunID: "01S", CallID: "call_1", Action: store.Approve, By: "alice"}}, lease); err != nil {
		e.e("approving the suspended run after a prune: %v", err)
	}
	if _, err := s.Decide(e.ctx, []*store.Decision{{RunID: "01RC", CallID: "call_1", Action: store.Decline, By: "alice"}}, lease); err != nil {
		e.e("declining the suspended child after a prune: %v", err)
	}
}

// child makes a child run of root in status (running or suspended,
// with a pending call).
func child(e *env, s store.Store, id, root string, status store.Status) {
	e.t.Helper()
	r := &store.Run{ID: id, Agent: "db", Status: store.Running, Input: "x", SpecHash: "h1", State: []byte(`{}`),
		ParentID: root, ParentCall: "call_1", RootID: root}
	must(e, s.CreateRun(e.ctx, r, []byte("spec"), lease))
	if status != store.Suspended {
		return
	}
	r.Step = 1
	c := &store.Call{ID: "call_1", Seq: 1, Step: 1, Tool: "drop", Args: []byte(`{}`), Status: store.CallPending, Kind: store.KindApproval}
	must(e, s.Checkpoint(e.ctx, lease, r, []*store.Call{c}))
	must(e, s.Suspend(e.ctx, lease, r))
}

// With KeepAudit, each pruned run leaves a tombstone (id, root, agent,
// status, times, starter, decisions), and Audit lists the pruned runs'
// decisions in time order with the live ones, honouring Since, Until,
// Agent and Limit.
func testPruneKeepAudit(e *env) {
	s, p := pruner(e)
	as, ok := s.(store.AuditStore)
	if !ok {
		e.t.Fatal("the store is not a store.AuditStore")
	}
	t0 := e.clock.now()
	endedRun(e, s, "01A", "", "h1", store.Completed)
	e.clock.add(time.Hour)
	endedRun(e, s, "01T", "", "h1", store.Failed)
	endedRun(e, s, "01TC", "01T", "h1", store.Completed)
	e.clock.add(pruneAge)
	endedRun(e, s, "01L", "", "h1", store.Completed) // live, decided last
	before, err := as.Audit(e.ctx, store.AuditFilter{})
	if err != nil || len(before) != 4 {
		e.t.Fatalf("audit before: %+v, %v", before, err)
	}
	got, err := p.Prune(e.ctx, store.PruneOptions{Before: e.cutoff(), KeepAudit: true})
	if err != nil || got.Runs != 3 || got.Tombstones != 3 || got.Decisions != 3 {
		e.t.Fatalf("prune: %+v, %v", got, err)
	}
	ts, err := p.Tombstone(e.ctx, "01TC")
	if err != nil || ts.RootID != "01T" || ts.Agent != "db" || ts.Status != store.Completed || ts.StartedBy != "carol" ||
		!ts.CreatedAt.Equal(t0.Add(time.Hour)) || !ts.PrunedAt.Equal(e.clock.now()) || len(ts.Decisions) != 1 {
		e.t.Fatalf("tombstone: %+v, %v", ts, err)
	}
	if d := ts.Decisions[0]; d.CallID != "call_1" || d.Tool != "restart" || d.Action != store.Approve || d.By != "alice" ||
		d.OSUser != "alice" || d.Reason != "ok 01TC" || d.RunID != "01TC" || !d.At.Equal(t0.Add(time.Hour)) {
		e.e("tombstone's decision: %+v", d)
	}
	if _, err := p.Tombstone(e.ctx, "01L"); !errors.Is(err, store.ErrNotFound) {
		e.e("tombstone of a live run: %v, want ErrNotFound", err)
	}
	after, err := as.Audit(e.ctx, store.AuditFilter{})
	if err != nil || len(after) != 4 {
		e.t.Fatalf("audit after: %+v, %v", after, err)
	}
	for i, a := range after {
		b := before[i]
		if a.RunID != b.RunID || a.CallID != b.CallID || a.Action != b.Action || a.By != b.By || a.OSUser != b.OSUser ||
			a.Reason != b.Reason || !a.At.Equal(b.At) || a.Agent != b.Agent || a.RootID != b.RootID || a.Tool != b.Tool ||
			fmt.Sprint(a.Path) != fmt.Sprint(b.Path) {
			e.e("audit entry %d after the prune: %+v; before: %+v", i, a, b)
		}
	}
	checks := []struct {
		f    store.AuditFilter
		want string
	}{
		{store.AuditFilter{Since: t0.Add(time.Minute)}, "01T 01TC 01L"},
		{store.AuditFilter{Until: t0.Add(time.Minute)}, "01A"},
		{store.AuditFilter{Since: t0.Add(time.Minute), Until: t0.Add(2 * time.Hour)}, "01T 01TC"},
		{store.AuditFilter{Agent: "db"}, "01TC"},
		{store.AuditFilter{Agent: "lead"}, "01TC"},
		{store.AuditFilter{Agent: "oncall"}, "01A 01T 01TC 01L"},
		{store.AuditFilter{Agent: "oncall", RootOnly: true}, "01A 01T 01L"},
		{store.AuditFilter{Agent: "lea_"}, ""},
		{store.AuditFilter{Limit: 2}, "01A 01T"},
		{store.AuditFilter{Since: e.clock.now()}, "01L"},
	}
	for _, c := range checks {
		ds, err := as.Audit(e.ctx, c.f)
		var ids []string
		for _, d := range ds {
			ids = append(ids, d.RunID)
		}
		if got := fmt.Sprint(ids); err != nil || got != "["+c.want+"]" || len(ds) > 0 && len(ds[0].Path) == 0 {
			e.e("audit %+v: %s, %v; want [%s]", c.f, got, err, c.want)
		}
	}
	testAuditPages(e, as)
}

// testAuditPages: a page at a time (Limit and After), the audit lists
// the live decisions and the tombstones' as it does whole; a cursor the
// store did not make is ErrBadCursor.
func testAuditPages(e *env, as store.AuditStore) {
	for _, f := range []store.AuditFilter{{Limit: 1}, {Limit: 2}, {Limit: 3, Agent: "oncall", RootOnly: true}} {
		whole, err := as.Audit(e.ctx, store.AuditFilter{Agent: f.Agent, RootOnly: f.RootOnly})
		if err != nil {
			e.t.Fatal(err)
		}
		var got, want []string
		for _, d := range whole {
			want = append(want, d.RunID)
		}
		for range 10 {
			page, err := as.Audit(e.ctx, f)
			if err != nil {
				e.t.Fatalf("audit %+v: %v", f, err)
			}
			for _, d := range page {
				got = append(got, d.RunID)
			}
			if len(page) < f.Limit {
				break
			}
			f.After = page[len(page)-1].Cursor
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			e.e("audit by pages of %d: %v; whole: %v", f.Limit, got, want)
		}
	}
	for _, c := range []string{"x", "1", "-1.0", "1.x"} {
		if _, err := as.Audit(e.ctx, store.AuditFilter{After: c}); !errors.Is(err, store.ErrBadCursor) {
			e.e("audit after %q: %v, want ErrBadCursor", c, err)
		}
	}
}

// Batches: each holds at most Batch runs, a tree whole even when it is
// larger; together they prune everything, and a tree held by the newest
// event alone may wait (SQLite reuses a deleted highest id): a new event
// never gets an id at or below one seen before.
func testPruneBatches(e *env) {
	s, p := pruner(e)
	newest := suspended(e, s, "01L", 1) // live, made first
	e.clock.add(-pruneAge)
	for i := range 7 {
		endedRun(e, s, fmt.Sprintf("01B%d", i), "", "h1", store.Completed)
	}
	endedRun(e, s, "01T", "", "h1", store.Completed)
	endedRun(e, s, "01TC1", "01T", "h1", store.Completed)
	endedRun(e, s, "01TC2", "01T", "h1", store.Completed)
	endedRun(e, s, "01Z", "", "h1", store.Completed) // holds the newest event
	var last int64
	for _, id := range []string{"01Z", "01TC2"} {
		evs, err := s.Events(e.ctx, id, 0)
		must(e, err)
		last = max(last, evs[len(evs)-1].ID)
	}
	e.clock.add(pruneAge)
	got, err := p.Prune(e.ctx, store.PruneOptions{Before: e.cutoff(), Batch: 2, Pause: -1})
	if err != nil || got.Runs < 10 || got.Runs > 11 || got.Batches < 5 || got.Calls != got.Runs || got.Events != 3*got.Runs {
		e.t.Fatalf("prune in batches of 2: %+v, %v (want 10 or 11 runs in 5 or more batches)", got, err)
	}
	for _, id := range []string{"01T", "01TC1", "01TC2", "01B0", "01B6"} {
		if !gone(e, s, id) {
			e.e("run %s is still there", id)
		}
	}
	if got.Runs == 10 && gone(e, s, "01Z") {
		e.e("10 runs pruned, yet 01Z is gone too")
	}
	endedRun(e, s, "01N", "", "h1", store.Completed)
	evs, err := s.Events(e.ctx, "01N", 0)
	if err != nil || len(evs) == 0 || evs[0].ID <= last {
		e.e("an event after the prune: %+v, %v; want an id above %d, the last seen before", evs, err, last)
	}
	if r, err := s.Run(e.ctx, newest.ID); err != nil || r.Status != store.Suspended {
		e.e("the live run: %+v, %v", r, err)
	}
}
