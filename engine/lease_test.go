package engine

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlite"
)

// At the very millisecond its lease expires, a run a dead process held
// is still leased to the store: continue takes it over from the dead
// holder rather than claim it as free and be refused (CI: TestCrash,
// exit 4, once its runs outlived their leases).
func TestContinueAtLeaseExpiry(t *testing.T) {
	self := selfIdentity()
	if !self.known() {
		t.Skip("no process identity here (/proc of another PID namespace)")
	}
	var mu sync.Mutex
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "a.db"), sqlite.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g := compile(t, oncall)
	host, _ := os.Hostname()
	dead := store.Lease{Owner: newHolder(host, 4194300, "0123456789ab", self), TTL: time.Minute}
	if !HolderDead(dead.Owner) {
		t.Skip("pid 4194300 is alive here")
	}
	st := &state{Messages: []message{{Role: "user", Text: "x"}}}
	r := &store.Run{ID: "01AAAAAAAAAAAAAAAAAAAAAAAA", Agent: "oncall", Status: store.Running, Input: "x", SpecHash: g.hash, State: st.encode()}
	if err := db.CreateRun(ctx, r, g.snapshot, dead); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(time.Minute + 500*time.Microsecond) // the lease's last millisecond
	mu.Unlock()
	v, err := New(db, Config{Now: clock}).Continue(ctx, r.ID)
	if err != nil {
		t.Fatalf("continue at the lease's expiry: %v", err)
	}
	if v.Status != store.Suspended {
		t.Errorf("status %s, want suspended", v.Status)
	}
}
