package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/postgres"
	"github.com/agentctl/agentctl/engine/store/postgres/pgtest"
	"github.com/agentctl/agentctl/engine/store/sqlstore"
)

// proxied opens a fresh database through a proxy that can cut its
// connections, and directly.
func proxied(t *testing.T) (through, direct *sqlstore.DB, p *pgtest.Proxy) {
	t.Helper()
	ctx := context.Background()
	dsn, err := server.NewDB(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	p, err = pgtest.NewProxy(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	for _, d := range []struct {
		url string
		db  **sqlstore.DB
	}{{p.URL(dsn), &through}, {dsn, &direct}} {
		db, err := postgres.Open(ctx, d.url, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		*d.db = db
	}
	return through, direct, p
}

// TestCommitOutcomeUnknown: a connection cut after COMMIT was sent is an
// unknown outcome (ErrOutcomeUnknown, never "nothing was changed"); the
// decision did commit, as a read through another connection shows. A
// connection cut before the commit is ErrUnavailable: nothing changed.
func TestCommitOutcomeUnknown(t *testing.T) {
	ctx := context.Background()
	db, direct, p := proxied(t)
	lease := store.Lease{Owner: "p1", TTL: time.Minute}
	suspendedRun(t, db, "01A", lease)
	p.CutAfter("commit")
	_, err := db.Decide(ctx, []*store.Decision{{RunID: "01A", CallID: "call_1", Action: store.Approve, By: "alice"}}, store.Lease{})
	err = db.Classify(err)
	if !errors.Is(err, store.ErrOutcomeUnknown) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("a cut after COMMIT: %v; want ErrOutcomeUnknown, not ErrUnavailable", err)
	}
	got, err := direct.Calls(ctx, "01A")
	if err != nil || got[0].Status != store.CallApproved {
		t.Fatalf("after the cut, the call is %v (%v); want approved: the COMMIT reached the server", got, err)
	}
	// Cut mid-transaction (at the decision's INSERT): nothing changed.
	suspendedRun(t, db, "01B", lease)
	p.CutAfter("insert into decisions")
	_, err = db.Decide(ctx, []*store.Decision{{RunID: "01B", CallID: "call_1", Action: store.Approve, By: "alice"}}, store.Lease{})
	err = db.Classify(err)
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrOutcomeUnknown) {
		t.Fatalf("a cut before COMMIT: %v; want ErrUnavailable", err)
	}
	if got, _ := direct.Calls(ctx, "01B"); got[0].Status != store.CallPending {
		t.Fatalf("after a cut before COMMIT, the call is %s; want pending", got[0].Status)
	}
}

// suspendedRun creates run id, suspended on call_1's approval.
func suspendedRun(t *testing.T, db *sqlstore.DB, id string, lease store.Lease) {
	t.Helper()
	ctx := context.Background()
	r := &store.Run{ID: id, Agent: "a", Status: store.Running, Input: "x", SpecHash: "h", State: []byte(`{}`)}
	if err := db.CreateRun(ctx, r, []byte("spec"), lease); err != nil {
		t.Fatal(err)
	}
	r.Step = 1
	calls := []*store.Call{{ID: "call_1", Seq: 1, Step: 1, Tool: "t", Args: []byte(`{}`), Status: store.CallPending, Kind: store.KindApproval}}
	if err := db.Checkpoint(ctx, lease, r, calls); err != nil {
		t.Fatal(err)
	}
	if err := db.Suspend(ctx, lease, r); err != nil {
		t.Fatal(err)
	}
}
