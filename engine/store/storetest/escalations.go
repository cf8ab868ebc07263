package storetest

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/agentctl/agentctl/engine/store"
)

// testEscalations: a step of a call's escalation ladder is recorded
// once, with its events, whichever of several processes racing is
// first; never once its call is decided; a step that decides the call
// goes with its decision, all or none.
func testEscalations(e *env) {
	a, b := e.handle(), e.handle()
	suspended(e, a, "01E", 2)
	if ids, err := a.AwaitingApproval(e.ctx); err != nil || len(ids) != 1 || ids[0] != "01E" {
		e.e("AwaitingApproval = %v, %v; want [01E]", ids, err)
	}
	var fired atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		s := []store.Store{a, b}[i%2]
		wg.Go(func() {
			ev := store.Event{RunID: "01E", Type: "escalated", Data: []byte(`{"step":1}`)}
			ok, err := s.Escalate(e.ctx, &store.Escalation{RunID: "01E", CallID: "call_1", Step: 1, Kind: "remind"}, ev)
			if err != nil {
				e.e("escalate: %v", err)
			}
			if ok {
				fired.Add(1)
			}
		})
	}
	wg.Wait()
	if n := fired.Load(); n != 1 {
		e.e("step 1 fired %d times by 8 racing escalations, want once", n)
	}
	evs, _ := a.Events(e.ctx, "01E", 0)
	n := 0
	for _, ev := range evs {
		if ev.Type == "escalated" {
			n++
		}
	}
	if n != 1 {
		e.e("%d escalated events, want 1", n)
	}
	// A decide step: the decision and the step in one transaction; a
	// second one conflicts and changes nothing.
	decide := func(s store.Store) error {
		_, err := s.Decide(e.ctx, []*store.Decision{{RunID: "01E", CallID: "call_2", Action: store.Decline, By: "agentctl",
			Escalation: &store.Escalation{RunID: "01E", CallID: "call_2", Step: 2, Kind: "decide"}}}, store.Lease{})
		return err
	}
	if err := decide(a); err != nil {
		e.t.Fatal(err)
	}
	if err := decide(b); !errors.Is(err, store.ErrConflict) {
		e.e("a second decide step: %v, want a conflict", err)
	}
	// call_2 is decided: no step of it happens any more.
	if ok, err := b.Escalate(e.ctx, &store.Escalation{RunID: "01E", CallID: "call_2", Step: 3, Kind: "remind"}); ok || err != nil {
		e.e("a step of a decided call: fired %v, %v", ok, err)
	}
	got, err := b.Escalations(e.ctx, []string{"01E", "01X"})
	if err != nil || len(got["01E"]) != 2 || got["01E"][0].Step != 1 || got["01E"][1].CallID != "call_2" || got["01E"][1].Kind != "decide" {
		e.e("Escalations = %v, %v", got, err)
	}
	if !got["01E"][0].At.Equal(e.clock.now()) {
		e.e("step 1 at %v, want the store's now %v", got["01E"][0].At, e.clock.now())
	}
}
