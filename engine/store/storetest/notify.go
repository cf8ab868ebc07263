package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// The outbox: SourceSpec's cursor is there from the start, other
// sources' once set; notifications are stored once per id whoever queues
// them again; a cursor never moves back; a claim keeps others off until
// it lapses; only the claimant records an attempt; redeliver resets one.
func testNotifyOutbox(e *env) {
	s := server(e)
	if c, ok, err := s.NotifyCursor(e.ctx, store.SourceSpec); err != nil || !ok || c != "" {
		e.t.Fatalf("the spec source's cursor in a new store: %q, %v, %v; want \"\", true", c, ok, err)
	}
	if _, ok, err := s.NotifyCursor(e.ctx, store.SourceServer); err != nil || ok {
		e.t.Fatalf("the server source's cursor in a new store: %v, %v; want none", ok, err)
	}
	if end, err := s.FeedEnd(e.ctx); err != nil || end != "" {
		e.t.Fatalf("the end of an empty feed: %q, %v", end, err)
	}
	// A source that starts at the end of an empty feed has a cursor.
	if err := s.Enqueue(e.ctx, "fresh", "", "", nil); err != nil {
		e.t.Fatal(err)
	}
	if c, ok, err := s.NotifyCursor(e.ctx, "fresh"); err != nil || !ok || c != "" {
		e.e("a source set at the end of an empty feed: %q, %v, %v; want \"\", true", c, ok, err)
	}
	r := newRun(e, s, "01A", lease)
	for i := range 3 {
		if err := s.Checkpoint(e.ctx, lease, r, nil, store.Event{RunID: r.ID, Type: "step", Data: []byte(fmt.Sprintf(`{"n":%d}`, i))}); err != nil {
			e.t.Fatal(err)
		}
	}
	end, err := s.FeedEnd(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if evs, err := s.Feed(e.ctx, end, store.FeedFilter{}); err != nil || len(evs) != 0 {
		e.t.Fatalf("the feed after its end: %d events, %v", len(evs), err)
	}
	mk := func(id string) *store.Notification {
		return &store.Notification{ID: id, Source: store.SourceSpec, Type: "approval", RunID: r.ID, CallID: "call_1",
			Target: []byte(`{"command":["x"]}`), Message: []byte(`{"id":"` + id + `"}`)}
	}
	now := e.clock.now()
	if err := s.Enqueue(e.ctx, store.SourceSpec, "", end, []*store.Notification{mk("ntf_a"), mk("ntf_b")}); err != nil {
		e.t.Fatal(err)
	}
	// Queued again (a deliverer that read the same events): nothing new,
	// and a stale cursor does not move it.
	if err := s.Enqueue(e.ctx, store.SourceSpec, "", "1", []*store.Notification{mk("ntf_a")}); err != nil {
		e.t.Fatal(err)
	}
	if c, _, _ := s.NotifyCursor(e.ctx, store.SourceSpec); c != end {
		e.e("the cursor after a stale move: %q, want %q", c, end)
	}
	if err := s.Enqueue(e.ctx, store.SourceServer, "", end, nil); err != nil {
		e.t.Fatal(err)
	}
	if c, ok, _ := s.NotifyCursor(e.ctx, store.SourceServer); !ok || c != end {
		e.e("the server source's cursor once set: %q, %v; want %q", c, ok, end)
	}
	all, err := s.Notifications(e.ctx, store.NotificationFilter{})
	if err != nil || len(all) != 2 {
		e.t.Fatalf("Notifications: %d, %v; want 2", len(all), err)
	}
	if n := all[1]; n.Status != store.NotifyPending || n.Attempts != 0 || !n.NextAt.Equal(now) || string(n.Target) != `{"command":["x"]}` {
		e.e("a queued notification: %+v", n)
	}
	claim := store.NotifyClaim{Owner: "w1", Now: now, TTL: time.Minute}
	got, err := s.ClaimNotifications(e.ctx, claim)
	if err != nil || len(got) != 2 {
		e.t.Fatalf("claim: %d, %v; want both", len(got), err)
	}
	if again, err := s.ClaimNotifications(e.ctx, store.NotifyClaim{Owner: "w2", Now: now, TTL: time.Minute}); err != nil || len(again) != 0 {
		e.e("a second claimant got %d (%v), want none: they are claimed", len(again), err)
	}
	a := got[0]
	a.Status, a.Attempts, a.DeliveredAt = store.NotifyDelivered, 1, now
	if ok, err := s.Attempted(e.ctx, "w2", a, now); err != nil || ok {
		e.e("an attempt recorded by one who holds no claim: %v, %v", ok, err)
	}
	if ok, err := s.Attempted(e.ctx, "w1", a, now); err != nil || !ok {
		e.e("the claimant's attempt: %v, %v", ok, err)
	}
	b := got[1]
	b.Attempts, b.LastError, b.NextAt = 1, "503", now.Add(time.Second)
	if ok, err := s.Attempted(e.ctx, "w1", b, now); err != nil || !ok {
		e.e("a failed attempt: %v, %v", ok, err)
	}
	if due, _ := s.ClaimNotifications(e.ctx, claim); len(due) != 0 {
		e.e("claimed %d before the retry is due", len(due))
	}
	later := claim
	later.Now = now.Add(time.Second)
	if due, _ := s.ClaimNotifications(e.ctx, later); len(due) != 1 || due[0].ID != b.ID || due[0].LastError != "503" {
		e.e("the retry once due: %v", due)
	}
	// The claim lapses: another deliverer may take it.
	lapsed := store.NotifyClaim{Owner: "w2", Now: now.Add(2 * time.Minute), TTL: time.Minute}
	if due, _ := s.ClaimNotifications(e.ctx, lapsed); len(due) != 1 {
		e.e("a lapsed claim: %d claimable, want 1", len(due))
	}
	if ok, _ := s.Attempted(e.ctx, "w1", b, now); ok {
		e.e("the first claimant recorded an attempt after its claim lapsed and another took it")
	}
	// A claimant known to be dead holds nothing, lapsed or not.
	if who, err := s.NotifyClaimants(e.ctx, now.Add(2*time.Minute)); err != nil || len(who) != 1 || who[0] != "w2" {
		e.e("claimants: %v, %v; want w2", who, err)
	}
	if due, _ := s.ClaimNotifications(e.ctx, store.NotifyClaim{Owner: "w4", Now: now.Add(2 * time.Minute), TTL: time.Minute}); len(due) != 0 {
		e.e("claimed %d held by a live claimant", len(due))
	}
	if due, _ := s.ClaimNotifications(e.ctx, store.NotifyClaim{Owner: "w4", Now: now.Add(2 * time.Minute), TTL: time.Minute, Dead: []string{"w2"}}); len(due) != 1 {
		e.e("claimed %d held by a dead claimant, want 1", len(due))
	}
	if del, _ := s.Notifications(e.ctx, store.NotificationFilter{Status: store.NotifyDelivered}); len(del) != 1 || del[0].ID != a.ID || del[0].DeliveredAt.IsZero() {
		e.e("delivered ones: %v", del)
	}
	if _, err := s.Redeliver(e.ctx, "ntf_", now); err == nil {
		e.e("redeliver of an ambiguous prefix succeeded")
	}
	if _, err := s.Redeliver(e.ctx, "nope", now); !errors.Is(err, store.ErrNotFound) {
		e.e("redeliver of an unknown id: %v", err)
	}
	n, err := s.Redeliver(e.ctx, "ntf_a", now.Add(3*time.Minute))
	if err != nil || n.Status != store.NotifyPending || n.Attempts != 0 {
		e.t.Fatalf("redeliver: %+v, %v", n, err)
	}
	if due, _ := s.ClaimNotifications(e.ctx, store.NotifyClaim{Owner: "w3", Now: now.Add(3 * time.Minute), TTL: time.Minute, IDs: []string{"ntf_a"}}); len(due) != 1 || due[0].ID != "ntf_a" {
		e.e("the redelivered one, claimed by id: %v", due)
	}
}

// Deliverers claiming at once never share a notification.
func testNotifyClaimRace(e *env) {
	s := server(e)
	r := newRun(e, s, "01A", lease)
	var ns []*store.Notification
	for i := range 40 {
		ns = append(ns, &store.Notification{ID: fmt.Sprintf("ntf_%02d", i), Source: store.SourceSpec, Type: "approval", RunID: r.ID,
			Target: []byte(`{}`), Message: []byte(`{}`)})
	}
	if err := s.Enqueue(e.ctx, store.SourceSpec, "", "", ns); err != nil {
		e.t.Fatal(err)
	}
	var mu sync.Mutex
	var claimed []string
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := s.ClaimNotifications(e.ctx, store.NotifyClaim{Owner: fmt.Sprint("w", w), Now: e.clock.now(), TTL: time.Hour, Limit: 3})
				if err != nil {
					e.e("claim: %v", err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, n := range got {
					claimed = append(claimed, n.ID)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(claimed)
	if len(claimed) != 40 || len(slices.Compact(slices.Clone(claimed))) != 40 {
		e.e("claimed %d notifications (%d distinct) among 4 deliverers, want each of 40 once", len(claimed), len(slices.Compact(claimed)))
	}
}
