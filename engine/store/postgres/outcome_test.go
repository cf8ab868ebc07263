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
		db, err := postgres.Open(ctx, d.url, postgres.Options{CommitWait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		*d.db = db
	}
	return through, direct, p
}

// TestCommitOutcomeUnknown: a connection cut after COMMIT was sent is
// settled by asking PostgreSQL what became of the transaction: it
// committed, and that is the answer. When the database cannot be asked
// (it refuses connections), the outcome is unknown (ErrOutcomeUnknown,
// never "nothing was changed"); the decision did commit, as a read once
// it is back shows. A connection cut before the commit is
// ErrUnavailable: nothing changed.
func TestCommitOutcomeUnknown(t *testing.T) {
	ctx := context.Background()
	db, direct, p := proxied(t)
	lease := store.Lease{Owner: "p1", TTL: time.Minute}
	approve := func(id string) error {
		_, err := db.Decide(ctx, []*store.Decision{{RunID: id, CallID: "call_1", Action: store.Approve, By: "alice"}}, store.Lease{})
		return db.Classify(err)
	}
	status := func(id string) store.CallStatus {
		t.Helper()
		got, err := direct.Calls(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return got[0].Status
	}
	suspendedRun(t, db, "01A", lease)
	p.CutAfter("commit", "insert into decisions")
	if err := approve("01A"); err != nil || status("01A") != store.CallApproved {
		t.Fatalf("a cut after COMMIT, the database reachable: %v, call %s; want it settled as committed", err, status("01A"))
	}
	suspendedRun(t, db, "01B", lease)
	p.Refuse(true, true)
	p.CutAfter("commit", "insert into decisions")
	err := approve("01B")
	p.Refuse(false, false)
	if !errors.Is(err, store.ErrOutcomeUnknown) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("a cut after COMMIT, the database unreachable: %v; want ErrOutcomeUnknown, not ErrUnavailable", err)
	}
	if status("01B") != store.CallApproved {
		t.Fatalf("after the cut, the call is %s; want approved: the COMMIT reached the server", status("01B"))
	}
	// Cut mid-transaction (at the decision's INSERT): nothing changed.
	suspendedRun(t, db, "01C", lease)
	p.CutAfter("insert into decisions")
	if err := approve("01C"); !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrOutcomeUnknown) {
		t.Fatalf("a cut before COMMIT: %v; want ErrUnavailable", err)
	}
	if status("01C") != store.CallPending {
		t.Fatalf("after a cut before COMMIT, the call is %s; want pending", status("01C"))
	}
}

// suspendedRun creates run id, suspended on call_1's approval.
func suspendedRun(t *testing.T, db *sqlstore.DB, id string, lease store.Lease) {
	t.Helper()
	ctx := context.Background()
	r := &store.Run{ID: id, Agent: "a", Status: store.Running, Input: "x", SpecHash: "h", State: []byte(`{}`)}
	// After a cut, the pool hands out its dead connections one by one,
	// each failing once (nothing changed): try again, as the engine does.
	var err error
	for range 10 {
		if err = db.CreateRun(ctx, r, []byte("spec"), lease); !errors.Is(db.Classify(err), store.ErrUnavailable) {
			break
		}
	}
	if err != nil {
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
