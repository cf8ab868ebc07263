package storetest

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// workRun creates a running run of agent oncall (spec h1) at step 2,
// with calls (seq in order, step 2 unless given), held by a process
// whose lease then expires: work for a worker.
func workRun(e *env, s store.Store, id string, calls ...*store.Call) {
	e.t.Helper()
	r := &store.Run{ID: id, Agent: "oncall", Status: store.Running, Input: "in", SpecHash: "h1", State: []byte(`{}`), Step: 2}
	dead := store.Lease{Owner: "p9", TTL: time.Minute}
	if err := s.CreateRun(e.ctx, r, []byte("spec"), dead); err != nil {
		e.t.Fatal(err)
	}
	for i, c := range calls {
		c.Seq = i + 1
		c.ID = fmt.Sprintf("call_%d", c.Seq)
		if c.Step == 0 {
			c.Step = 2
		}
		if c.Args == nil {
			c.Args = []byte(`{}`)
		}
	}
	if err := s.Checkpoint(e.ctx, dead, r, calls); err != nil {
		e.t.Fatal(err)
	}
	e.clock.add(2 * time.Minute)
}

var plain = []store.Plain{{SpecHash: "h1", Agent: "oncall", Decl: "restart"}, {SpecHash: "h1", Agent: "oncall", Decl: "db"}}

// claimStart claims the one run of work there is, and checks that the
// calls it returns are the calls the store holds after it.
func claimStart(e *env, s store.Store, plain []store.Plain) *store.Claimed {
	e.t.Helper()
	w, err := s.ClaimStart(e.ctx, store.Lease{Owner: "w1", TTL: 24 * time.Hour}, "", plain)
	if err != nil || w == nil {
		e.t.Fatalf("claim: %v, %v", w, err)
	}
	if w.Run.Status != store.Running || w.Run.Owner != "w1" || w.Run.Expires.IsZero() {
		e.t.Errorf("claimed run %+v, want running, held by w1", w.Run)
	}
	stored, err := s.Calls(e.ctx, w.Run.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(stored) != len(w.Calls) {
		e.t.Fatalf("claim returned %d calls, the store holds %d", len(w.Calls), len(stored))
	}
	for i := range stored {
		if !reflect.DeepEqual(*stored[i], *w.Calls[i]) {
			e.t.Errorf("claim returned\n%+v\nthe store holds\n%+v", *w.Calls[i], *stored[i])
		}
	}
	return w
}

// ClaimStart claims a run of work (as testWork checks), returns its calls and
// starts the call its holder runs first, only when that is a plain
// tool's with its approval on record.
func testClaimStart(e *env) {
	s := e.handle()
	if w, err := s.ClaimStart(e.ctx, lease, "", plain); err != nil || w != nil {
		e.t.Fatalf("an empty queue: %+v, %v", w, err)
	}
	// A queued run has no calls.
	q := &store.Run{ID: "01Q", Agent: "oncall", Status: store.Queued, Input: "x", SpecHash: "h1", State: []byte(`{}`)}
	if err := s.CreateRun(e.ctx, q, []byte("spec"), store.Lease{}); err != nil {
		e.t.Fatal(err)
	}
	if w := claimStart(e, s, plain); w.Run.ID != "01Q" || len(w.Calls) != 0 || w.Started != "" {
		e.t.Errorf("queued: %+v", w)
	}
	approved := func(tool string) *store.Call {
		return &store.Call{Tool: tool, Status: store.CallApproved, Approvals: 1,
			Gate: store.Gate{Verdict: store.GateRequired, Reasons: []store.Reason{{Kind: store.ReasonTool}}}}
	}
	// The first approved call of the latest step, a plain tool's: started.
	// Every column comes back as stored.
	done := &store.Call{Tool: "check", Step: 1, Status: store.CallSucceeded, Result: `{"ok":"é \"q\""}`, ResultObject: true,
		Args: []byte(`{"s":"ngïnx"}`), Payload: []byte(`{"p":1}`), Resume: []byte(`{"r":2}`), ResumeSchema: []byte(`{}`),
		Deadline: e.clock.now().Add(time.Hour), GateError: "x", Needed: 2, Approvals: 2, StartedAt: e.clock.now(), FinishedAt: e.clock.now()}
	workRun(e, s, "01A", done, approved("restart"), approved("restart"))
	w := claimStart(e, s, plain)
	if w.Started != "call_2" || w.Calls[1].Status != store.CallExecuting || w.Calls[1].StartedAt.IsZero() || w.Calls[2].Status != store.CallApproved {
		e.t.Errorf("started %q, calls %+v %+v, want call_2 executing, call_3 approved", w.Started, w.Calls[1], w.Calls[2])
	}
	// An MCP server's tool, DECL.NAME, with no approval needed.
	free := &store.Call{Tool: "db.query", Status: store.CallApproved, Gate: store.Gate{Verdict: store.GateFree}}
	workRun(e, s, "01B", free)
	if w := claimStart(e, s, plain); w.Started != "call_1" {
		e.t.Errorf("a plain server tool needing no approval: started %q", w.Started)
	}
	// Nothing started: the first approved call is not plain (a later one
	// is), the tool is plain only in another spec or agent, an approval
	// needed is not on record, or the approved call is of an older step.
	forged := approved("restart")
	forged.Approvals = 0
	old := approved("restart")
	old.Step = 1
	cases := map[string][]*store.Call{
		"01C": {approved("check"), approved("restart")},
		"01D": {approved("dbx")},
		"01E": {forged},
		"01F": {old},
	}
	for id, calls := range cases {
		workRun(e, s, id, calls...)
		if w := claimStart(e, s, plain); w.Started != "" {
			e.t.Errorf("run %s: started %q", w.Run.ID, w.Started)
		}
	}
	workRun(e, s, "01G", approved("restart"))
	other := []store.Plain{{SpecHash: "h2", Agent: "oncall", Decl: "restart"}, {SpecHash: "h1", Agent: "ops", Decl: "restart"}}
	if w := claimStart(e, s, other); w.Started != "" {
		e.t.Errorf("plain in another spec or agent: started %q", w.Started)
	}
	if w, err := s.ClaimStart(e.ctx, lease, "", plain); err != nil || w != nil {
		e.t.Errorf("all claimed: %+v, %v", w, err)
	}
}

// Workers claiming at once, and the dead-looking holders of the runs
// (their leases expired) moving the same calls on to executing: each
// call starts once, each run is claimed once.
func testClaimStartRace(e *env) {
	const n = 12
	s := e.handle()
	holder := store.Lease{Owner: "p9", TTL: time.Minute}
	for i := range n {
		newRun(e, s, fmt.Sprintf("01R%02d", i), holder, store.CallApproved)
	}
	e.clock.add(2 * time.Minute) // the holder's leases expire
	var mu sync.Mutex
	starts, claims := map[string]int{}, map[string]int{}
	note := func(m map[string]int, id string) { mu.Lock(); m[id]++; mu.Unlock() }
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			h := e.handle()
			l := store.Lease{Owner: fmt.Sprintf("w%d", w), TTL: time.Minute}
			plain := []store.Plain{{SpecHash: "h1", Agent: "oncall", Decl: "restart"}}
			for {
				c, err := h.ClaimStart(e.ctx, l, "", plain)
				if err != nil {
					e.t.Error(err)
					return
				}
				if c == nil {
					return
				}
				note(claims, c.Run.ID)
				if c.Started != "" {
					note(starts, c.Run.ID)
				}
			}
		})
	}
	wg.Go(func() {
		h := e.handle()
		for i := range n {
			id := fmt.Sprintf("01R%02d", i)
			if err := h.MoveCall(e.ctx, holder, start(id, "call_1")); err == nil {
				note(starts, id)
			}
		}
	})
	wg.Wait()
	for i := range n {
		id := fmt.Sprintf("01R%02d", i)
		if claims[id] != 1 || starts[id] != 1 {
			e.t.Errorf("run %s: claimed %d times, its call started %d times; want once each", id, claims[id], starts[id])
		}
	}
}

// claimWork is ClaimStart with no plain tools: the claim alone, its run.
func claimWork(ctx context.Context, s store.Store, l store.Lease, agent string) (*store.Run, error) {
	w, err := s.ClaimStart(ctx, l, agent, nil)
	if w == nil {
		return nil, err
	}
	return w.Run, err
}
