package storetest

import (
	"errors"

	"github.com/agentctl/agentctl/engine/store"
)

// Apply commits a new run, its checkpoint and its calls' moves in one
// transaction: every part or none; a run not idle is left running with
// the rest committed.
func testApply(e *env) {
	s := e.handle()
	r := &store.Run{ID: "01A", Agent: "oncall", Status: store.Running, SpecHash: "h1", State: []byte(`{}`), Step: 1}
	c := &store.Call{ID: "call_1", Seq: 1, Step: 1, Tool: "restart", Args: []byte(`{}`), Status: store.CallApproved}
	// A move that cannot be made undoes the creation before it.
	bad := store.Writes{Create: []store.NewRun{{Run: r, Spec: []byte("spec")}}, Run: r, Calls: []*store.Call{c},
		Moves: []store.Move{{RunID: "01A", CallID: "call_9", From: store.CallApproved, To: store.CallExecuting}}}
	var ce *store.ConflictError
	if err := s.Apply(e.ctx, lease, bad, store.Event{RunID: "01A", Type: "x", Data: []byte(`{}`)}); !errors.As(err, &ce) {
		e.t.Fatalf("a move of an unknown call: %v, want a *ConflictError", err)
	}
	if _, err := s.Run(e.ctx, "01A"); !errors.Is(err, store.ErrNotFound) {
		e.t.Fatalf("after a failed Apply the run exists: %v", err)
	}
	evs := []store.Event{{RunID: "01A", Type: "tool-call", Data: []byte(`{}`)}}
	ok := store.Writes{Create: []store.NewRun{{Run: r, Spec: []byte("spec")}}, Run: r, Calls: []*store.Call{c}, Moves: []store.Move{start("01A", "call_1")}}
	if err := s.Apply(e.ctx, lease, ok, evs...); err != nil {
		e.t.Fatal(err)
	}
	if evs[0].At.IsZero() || r.CreatedAt.IsZero() || c.CreatedAt.IsZero() || c.RunID != "01A" {
		e.t.Errorf("not stamped: event at %v, run %v, call %+v", evs[0].At, r.CreatedAt, c)
	}
	calls, err := s.Calls(e.ctx, "01A")
	if err != nil || len(calls) != 1 || calls[0].Status != store.CallExecuting || calls[0].StartedAt.IsZero() {
		e.t.Fatalf("calls: %+v, %v", calls, err)
	}
	got, err := s.Run(e.ctx, "01A")
	if err != nil || got.Owner != lease.Owner || got.Step != 1 {
		e.t.Fatalf("run: %+v, %v", got, err)
	}
	// Suspending a run with nothing pending keeps it running, the other
	// writes committed.
	r.Step = 2
	done := store.Move{RunID: "01A", CallID: "call_1", From: store.CallExecuting, To: store.CallSucceeded, Result: "ok"}
	if err := s.Apply(e.ctx, lease, store.Writes{Run: r, Moves: []store.Move{done}, Suspend: r}); !errors.Is(err, store.ErrNotIdle) {
		e.t.Fatalf("suspend with nothing pending: %v, want ErrNotIdle", err)
	}
	if got, _ := s.Run(e.ctx, "01A"); got.Status != store.Running || got.Step != 2 || got.Owner != lease.Owner {
		e.t.Errorf("not idle: %+v, want running at step 2, held", got)
	}
	if calls, _ := s.Calls(e.ctx, "01A"); calls[0].Status != store.CallSucceeded {
		e.t.Errorf("not idle: the move was undone: %+v", calls[0])
	}
	// A turn's checkpoint with a pending call and the suspension, at once.
	r.Step = 3
	p := &store.Call{ID: "call_2", Seq: 2, Step: 3, Tool: "restart", Args: []byte(`{}`), Status: store.CallPending, Kind: store.KindApproval}
	if err := s.Apply(e.ctx, lease, store.Writes{Run: r, Calls: []*store.Call{p}, Suspend: r}); err != nil {
		e.t.Fatal(err)
	}
	if got, _ := s.Run(e.ctx, "01A"); got.Status != store.Suspended || r.Status != store.Suspended || got.Owner != "" {
		e.t.Errorf("suspended: %+v (given %s)", got, r.Status)
	}
	// Another process's lease writes nothing.
	other := store.Lease{Owner: "p2", TTL: lease.TTL}
	if err := s.Apply(e.ctx, other, store.Writes{Run: r}); !errors.Is(err, store.ErrLeaseLost) {
		e.t.Errorf("another lease: %v, want ErrLeaseLost", err)
	}
}

// An approval with Start that claims the run also starts its call; one
// that does not claim it (detached), or leaves the call pending (a second
// approver needed), starts nothing.
func testDecideStarts(e *env) {
	s := e.handle()
	suspended(e, s, "01A", 2)
	other := store.Lease{Owner: "p2", TTL: lease.TTL}
	approve := func(call string, l store.Lease, needed int) bool {
		e.t.Helper()
		claimed, err := s.Decide(e.ctx, []*store.Decision{{RunID: "01A", CallID: call, Action: store.Approve, By: "alice", OSUser: "alice", Needed: needed, Start: true}}, l)
		if err != nil {
			e.t.Fatal(err)
		}
		return claimed
	}
	status := func(call string) (store.CallStatus, bool) {
		calls, err := s.Calls(e.ctx, "01A")
		if err != nil {
			e.t.Fatal(err)
		}
		for _, c := range calls {
			if c.ID == call {
				return c.Status, !c.StartedAt.IsZero()
			}
		}
		return "", false
	}
	if approve("call_1", other, 2) {
		e.t.Error("an approval that leaves the call pending claimed the run")
	}
	if st, _ := status("call_1"); st != store.CallPending {
		e.t.Errorf("one of two approvals: %s, want pending", st)
	}
	if approve("call_2", store.Lease{}, 1) {
		e.t.Error("a detached approval claimed the run")
	}
	if st, at := status("call_2"); st != store.CallApproved || at {
		e.t.Errorf("detached approval with Start: %s (started %v), want approved", st, at)
	}
	// Another call of the run, approved by a process that claims it.
	suspended(e, s, "01B", 1)
	claimed, err := s.Decide(e.ctx, []*store.Decision{{RunID: "01B", CallID: "call_1", Action: store.Approve, By: "bob", OSUser: "bob", Start: true}}, lease)
	if err != nil || !claimed {
		e.t.Fatalf("claimed %v, %v", claimed, err)
	}
	calls, _ := s.Calls(e.ctx, "01B")
	if calls[0].Status != store.CallExecuting || calls[0].StartedAt.IsZero() {
		e.t.Errorf("approved with Start and claimed: %+v, want executing, started", calls[0])
	}
}
