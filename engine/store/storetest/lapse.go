package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// Holders lists each process holding a running run once; Lapse ends a
// dead holder's leases at once, and only its own: a worker then claims
// its runs, and a run claimed meanwhile stays with its new holder.
func testLapse(e *env) {
	s := e.handle()
	dead, live := store.Lease{Owner: "dead", TTL: time.Hour}, store.Lease{Owner: "live", TTL: time.Hour}
	newRun(e, s, "01A", dead)
	newRun(e, s, "01B", dead)
	newRun(e, s, "01C", live)
	newRun(e, s, "01D", store.Lease{Owner: "expired", TTL: time.Second})
	suspended(e, s, "01E", 1) // held by no one
	e.clock.add(2 * time.Second)
	holders := func(want string) {
		e.t.Helper()
		got, err := s.Holders(e.ctx)
		slices.Sort(got)
		if err != nil || strings.Join(got, " ") != want {
			e.t.Errorf("holders %v, %v; want %s", got, err, want)
		}
	}
	holders("dead live")
	if r, err := claimWork(e.ctx, s, store.Lease{Owner: "w1", TTL: time.Minute}, ""); err != nil || r == nil || r.ID != "01D" {
		e.t.Fatalf("claimed %+v, %v; want only the run whose lease ran out", r, err)
	}
	if n, err := s.Lapse(e.ctx, "dead"); err != nil || n != 2 {
		e.t.Fatalf("lapse: %d, %v; want 2", n, err)
	}
	holders("live w1")
	r, err := claimWork(e.ctx, s, store.Lease{Owner: "w2", TTL: time.Minute}, "")
	if err != nil || r == nil || r.ID != "01A" || r.Owner != "w2" {
		e.t.Fatalf("claimed %+v, %v; want 01A, a dead holder's run", r, err)
	}
	// A lease taken by another since is not ended, nor one ended already.
	if n, err := s.Lapse(e.ctx, "dead"); err != nil || n != 0 {
		e.t.Errorf("lapse again: %d, %v; want 0", n, err)
	}
	if got, _ := s.Run(e.ctx, "01A"); got.Owner != "w2" || !got.Expires.After(e.clock.now()) {
		e.t.Errorf("a run claimed since: %+v", got)
	}
	if n, err := s.Lapse(e.ctx, "nobody"); err != nil || n != 0 {
		e.t.Errorf("lapse of a holder of nothing: %d, %v", n, err)
	}
	if got, _ := s.Run(e.ctx, "01C"); got.Owner != "live" || !got.Expires.After(e.clock.now()) {
		e.t.Errorf("a live holder's run: %+v", got)
	}
}

// Several workers find the same dead holder: each of its runs is
// claimed once, and its leases are ended once in all.
func testLapseRace(e *env) {
	const n = 12
	s := e.handle()
	dead := store.Lease{Owner: "dead", TTL: time.Hour}
	for i := range n {
		newRun(e, s, fmt.Sprintf("01R%02d", i), dead)
	}
	var mu sync.Mutex
	var ended atomic.Int64
	claims := map[string]int{}
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			h := e.handle()
			l := store.Lease{Owner: fmt.Sprintf("w%d", w), TTL: time.Minute}
			k, err := h.Lapse(e.ctx, "dead")
			if err != nil {
				e.t.Error(err)
				return
			}
			ended.Add(int64(k))
			for {
				r, err := claimWork(e.ctx, h, l, "")
				if err != nil || r == nil {
					if err != nil {
						e.t.Error(err)
					}
					return
				}
				mu.Lock()
				claims[r.ID]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ended.Load() != n {
		e.t.Errorf("%d leases ended, want %d", ended.Load(), n)
	}
	for i := range n {
		if id := fmt.Sprintf("01R%02d", i); claims[id] != 1 {
			e.t.Errorf("run %s claimed %d times", id, claims[id])
		}
	}
}
