package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/postgres"
	"github.com/agentctl/agentctl/engine/store/postgres/pgtest"
	"github.com/agentctl/agentctl/engine/store/sqlstore"
	"github.com/agentctl/agentctl/engine/store/storetest"
)

var server *pgtest.Server

func TestMain(m *testing.M) {
	var err error
	server, err = pgtest.Start()
	if err != nil {
		if pgtest.Required() || !errors.Is(err, pgtest.ErrNoServer) {
			fmt.Fprintln(os.Stderr, "postgres:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "skipping the Postgres store tests:", err)
		os.Exit(0)
	}
	code := m.Run()
	server.Stop()
	os.Exit(code)
}

// The store contract, on PostgreSQL.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) func() store.Store {
		dsn, err := server.NewDB(context.Background(), t.Name())
		if err != nil {
			t.Fatal(err)
		}
		return func() store.Store {
			db, err := postgres.Open(context.Background(), dsn, postgres.Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return db
		}
	})
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	dsn, err := server.NewDB(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().ExecContext(ctx, `UPDATE agentctl_schema SET version = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = postgres.Open(ctx, dsn, postgres.Options{})
	if !errors.Is(err, store.ErrNewerSchema) || !strings.Contains(err.Error(), "version 99") || strings.Contains(err.Error(), "password") {
		t.Fatalf("opening a newer schema: %v", err)
	}
}

func TestOldEvents(t *testing.T) {
	ctx := context.Background()
	dsn, err := server.NewDB(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	storetest.OldEvents(t, func(rows [][2]string) {
		db := oldRun(t, dsn)
		defer db.Close()
		for _, row := range rows {
			if _, err := db.SQL().ExecContext(ctx, `INSERT INTO events(run_id, type, data, at) VALUES ('01OLD', $1, $2, 0)`, row[0], row[1]); err != nil {
				t.Fatal(err)
			}
		}
		rewind(t, db, eventFields)
	}, func() store.Store {
		db, err := postgres.Open(ctx, dsn, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}

// The schema versions before the migrations the tests of old rows replay.
const (
	eventFields    = 3  // sqlstore.EventFieldsMigration
	resultObjects  = 4  // structured results
	serverSchema   = 5  // tokens, decisions.via, the inbox index, events.xid
	notifySchema   = 6  // notifications, their cursors, sessions
	replaySchema   = 7  // signed requests already seen
	timingsSchema  = 8  // call times, tombstones
	codesSchema    = 9  // runs_root without roots, calls_pending, event type codes
	requestsTable  = 10 // idempotency keys
	privateSchema  = 11 // tokens and sessions in agentctl_private
	workerProblems = 12 // workers.problems
	escalations    = 13 // the escalation steps that happened
	auditChain     = 14 // the audit chain and its checkpoints
)

// rewind undoes the migrations after version v, leaving the rows, and
// marks the schema at v, so that opening the database migrates it again.
func rewind(t *testing.T, db *sqlstore.DB, v int) {
	t.Helper()
	ctx := context.Background()
	undo := map[int]string{
		resultObjects: `ALTER TABLE calls DROP COLUMN result_object`,
		serverSchema: `DROP TABLE tokens; DROP INDEX calls_waiting; ALTER TABLE decisions DROP COLUMN via;
			DROP INDEX events_feed; ALTER TABLE events DROP COLUMN xid`,
		notifySchema:  `DROP TABLE notifications; DROP TABLE notify_cursors; DROP TABLE sessions`,
		replaySchema:  `DROP TABLE replays`,
		timingsSchema: `DROP INDEX runs_ended; DROP TABLE tombstones; ALTER TABLE calls DROP COLUMN finished_at; ALTER TABLE calls DROP COLUMN started_at`,
		codesSchema: `DROP VIEW events; DROP FUNCTION agentctl_events_insert(); ALTER TABLE event_rows RENAME TO events;
			DROP INDEX calls_pending; DROP INDEX runs_root;
			CREATE INDEX runs_root ON runs(root_id, id)`,
		requestsTable: `DROP TABLE requests`,
		privateSchema: `ALTER TABLE agentctl_private.tokens SET SCHEMA public; ALTER TABLE agentctl_private.sessions SET SCHEMA public;
			DROP SCHEMA agentctl_private`,
		workerProblems: `ALTER TABLE workers DROP COLUMN problems`,
		escalations:    `DROP TABLE escalations`,
		auditChain:     `DROP TABLE audit_chain; DROP TABLE audit_checkpoints`,
	}
	_, known := db.Schema()
	for i := known - 1; i >= v; i-- {
		if _, err := db.SQL().ExecContext(ctx, undo[i]); undo[i] != "" && err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.SQL().ExecContext(ctx, `UPDATE agentctl_schema SET version = $1`, v); err != nil {
		t.Fatal(err)
	}
}

func TestOldResults(t *testing.T) {
	ctx := context.Background()
	dsn, err := server.NewDB(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	storetest.OldResults(t, func(results, events []string) {
		db := oldRun(t, dsn)
		defer db.Close()
		for i, res := range results {
			if _, err := db.SQL().ExecContext(ctx, `INSERT INTO calls(run_id, call_id, seq, step, tool, args, status, result, created_at, updated_at)
				VALUES ('01OLD', $1, $2, 1, 't', '{}', 'succeeded', $3, 0, 0)`, fmt.Sprintf("call_%d", i+1), i+1, res); err != nil {
				t.Fatal(err)
			}
		}
		for _, data := range events {
			if _, err := db.SQL().ExecContext(ctx, `INSERT INTO events(run_id, type, data, at) VALUES ('01OLD', 'tool-result', $1, 0)`, data); err != nil {
				t.Fatal(err)
			}
		}
		rewind(t, db, resultObjects)
	}, func() store.Store {
		db, err := postgres.Open(ctx, dsn, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}

// oldRun opens the database and creates the completed run 01OLD, under
// which the tests of old rows insert them.
func oldRun(t *testing.T, dsn string) *sqlstore.DB {
	t.Helper()
	ctx := context.Background()
	db, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &store.Run{ID: "01OLD", Agent: "a", Status: store.Completed, SpecHash: "h", State: []byte("{}")}
	if err := db.CreateRun(ctx, r, []byte("s"), store.Lease{}); err != nil {
		db.Close()
		t.Fatal(err)
	}
	return db
}

// The feed is in commit order: a transaction that took the lower event
// id but commits last is not skipped by a reader that reads in between.
// Its event, and every event after it, waits until it ends.
func TestFeedCommitOrder(t *testing.T) {
	ctx, db := context.Background(), newDB(t)
	lease := store.Lease{Owner: "p", TTL: time.Minute}
	r := &store.Run{ID: "01A", Agent: "a", Status: store.Running, SpecHash: "h", State: []byte("{}")}
	if err := db.CreateRun(ctx, r, []byte("s"), lease); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint(ctx, lease, r, nil, store.Event{RunID: "01A", Type: "before"}); err != nil {
		t.Fatal(err)
	}
	// A transaction of another process writes an event and stays open.
	held, err := db.SQL().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback()
	var heldID int64
	if err := held.QueryRowContext(ctx, `INSERT INTO events(run_id, type, data, at) VALUES ('01A', 'held', '{}', 0) RETURNING id`).Scan(&heldID); err != nil {
		t.Fatal(err)
	}
	// A later transaction takes a higher id and commits first.
	if err := db.Checkpoint(ctx, lease, r, nil, store.Event{RunID: "01A", Type: "after"}); err != nil {
		t.Fatal(err)
	}
	types := func(evs []*store.Event) string {
		var out []string
		for _, e := range evs {
			out = append(out, string(e.Type))
		}
		return strings.Join(out, " ")
	}
	// Another transaction of the server (autovacuum) may hold the feed
	// back a moment: read until it returns something, or 10s pass.
	read := func(after string) ([]*store.Event, error) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			evs, err := db.Feed(ctx, after, store.FeedFilter{})
			if err != nil || len(evs) > 0 || time.Now().After(deadline) {
				return evs, err
			}
		}
	}
	evs, err := read("")
	if err != nil || types(evs) != "before" {
		t.Fatalf("feed while the first writer is open: %q, %v; want only the event committed before it began", types(evs), err)
	}
	if evs[0].ID >= heldID {
		t.Fatalf("event ids %d, %d: the held transaction should have the higher one", evs[0].ID, heldID)
	}
	cursor := evs[0].Cursor
	if err := held.Commit(); err != nil {
		t.Fatal(err)
	}
	evs, err = read(cursor)
	if err != nil || types(evs) != "held after" {
		t.Fatalf("feed after the first writer committed: %q, %v; want held, then after", types(evs), err)
	}
}

// BenchmarkWaiting pages the inbox of 10,000 calls waiting for approval
// (among 30,000 calls, in 20,000 runs): the first page, a page from the
// middle, and the first page of one agent's calls.
func BenchmarkWaiting(b *testing.B) {
	ctx := context.Background()
	dsn, err := server.NewDB(ctx, b.Name())
	if err != nil {
		b.Fatal(err)
	}
	db, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const n = 10000
	for _, q := range []string{
		`INSERT INTO specs(hash, body) VALUES ('h', 's')`,
		`INSERT INTO runs(id, agent, status, input, spec_hash, created_at, updated_at)
			SELECT 'R' || lpad(i::text, 7, '0'), (ARRAY['oncall', 'release', 'db'])[i % 3 + 1],
				CASE WHEN i % 2 = 0 THEN 'suspended' ELSE 'completed' END, 'in', 'h', i, i FROM generate_series(0, 2 * 10000 - 1) i`,
		`INSERT INTO calls(run_id, call_id, seq, step, tool, args, status, created_at, updated_at)
			SELECT id, 'call_1', 1, 1, 't', '{}', 'succeeded', created_at, created_at FROM runs`,
		`INSERT INTO calls(run_id, call_id, seq, step, tool, args, status, kind, created_at, updated_at)
			SELECT id, 'call_2', 2, 1, 't', '{}', 'pending', 'approval', 20000 - created_at, 20000 - created_at FROM runs WHERE status = 'suspended'`,
		`ANALYZE`,
	} {
		if _, err := db.SQL().ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	first, err := db.Waiting(ctx, store.WaitingFilter{Limit: n / 2})
	if err != nil || len(first) != n/2 {
		b.Fatal(len(first), err)
	}
	for _, bc := range []struct {
		name string
		f    store.WaitingFilter
	}{
		{"first", store.WaitingFilter{}},
		{"middle", store.WaitingFilter{After: first[len(first)-1].Cursor}},
		{"agent", store.WaitingFilter{Agent: "release"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				ws, err := db.Waiting(ctx, bc.f)
				if err != nil || len(ws) != 100 {
					b.Fatal(len(ws), err)
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// An agentctl of schema 9 still running reads and writes events as it
// did, by name, through the view events; its feed reads them too.
func TestOldProcess(t *testing.T) {
	db := newDB(t)
	storetest.OldProcess(t, db, db.SQL(), storetest.OldSQL{
		Events: `SELECT id, type FROM events WHERE run_id = $1 AND (xid, id) > ('0'::xid8, $2)
			AND xid < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY xid, id`,
		Append:      `INSERT INTO events(run_id, type, data, at) VALUES ($1, $2, '{}', 0), ($1, $3, '{}', 0)`,
		Delete:      `DELETE FROM events WHERE run_id IN ($1)`,
		DeleteWorks: true,
	})
}

// newDB opens a new, empty database of the test's own, closed when the
// test ends.
func newDB(t *testing.T) *sqlstore.DB {
	t.Helper()
	ctx := context.Background()
	dsn, err := server.NewDB(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// ownServer starts a server of the test's own, whose first transaction
// id is next, and returns it and the URL of an empty database on it.
func ownServer(t *testing.T, next uint64) (*pgtest.Server, string) {
	t.Helper()
	srv, err := pgtest.StartAt(next)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	dsn, err := srv.NewDB(context.Background(), "own")
	if err != nil {
		t.Fatal(err)
	}
	return srv, dsn
}

// Of processes racing to open a database at an older schema, one
// migrates it and says so; the others find it done.
func TestRacingUpgrade(t *testing.T) {
	ctx := context.Background()
	dsn, err := server.NewDB(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	db := oldRun(t, dsn)
	rewind(t, db, timingsSchema)
	db.Close()
	storetest.RacingUpgrade(t, timingsSchema, func() (storetest.Upgrader, error) {
		return postgres.Open(ctx, dsn, postgres.Options{})
	})
}

// The feed pages events in commit order when transaction ids gain a
// digit between them (a cluster's ids pass 10,000,000,000 here; a fresh
// one passes 1,000 and 10,000 within minutes): each event once, none
// missed, whatever the page size.
func TestFeedAcrossDigitBoundary(t *testing.T) {
	const boundary = 10_000_000_000
	_, dsn := ownServer(t, boundary-400)
	ctx := context.Background()
	db, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Burn transaction ids until five are left below the boundary.
	for {
		var x uint64
		if err := db.SQL().QueryRowContext(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&x); err != nil {
			t.Fatal(err)
		}
		if x >= boundary-6 {
			if x > boundary-4 {
				t.Fatalf("transaction id %d: opening the store took more than 400", x)
			}
			break
		}
	}
	lease := store.Lease{Owner: "p", TTL: time.Minute}
	r := &store.Run{ID: "01A", Agent: "a", Status: store.Running, SpecHash: "h", State: []byte("{}")}
	if err := db.CreateRun(ctx, r, []byte("s"), lease); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 12 { // one transaction each
		ty := fmt.Sprintf("e%02d", i)
		want = append(want, ty)
		if err := db.Checkpoint(ctx, lease, r, nil, store.Event{RunID: "01A", Type: store.EventType(ty)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []int{1, 3, 5, 100} {
		var got, cursors []string
		after := ""
		for range 100 {
			evs, err := db.Feed(ctx, after, store.FeedFilter{Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 {
				break
			}
			for _, e := range evs {
				got, cursors = append(got, string(e.Type)), append(cursors, e.Cursor)
			}
			after = evs[len(evs)-1].Cursor
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: the feed gave %v (cursors %v), want %v", limit, got, cursors, want)
		}
	}
}

// A Listener outlives its connection: after the server restarts, a Wait
// says it reconnected (a wake-up: notifications sent meanwhile are
// lost), and notifications arrive again.
func TestListenerSurvivesRestart(t *testing.T) {
	srv, dsn := ownServer(t, pgtest.FirstXID)
	ctx := context.Background()
	l, err := postgres.Listen(ctx, dsn, "agentctl_test")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	notify := func(payload string) {
		t.Helper()
		db, err := postgres.Open(ctx, dsn, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.SQL().ExecContext(ctx, `SELECT pg_notify('agentctl_test', $1)`, payload); err != nil {
			t.Fatal(err)
		}
	}
	notify("one")
	if got, err := l.Wait(ctx, 10*time.Second); got != "one" || err != nil {
		t.Fatalf("before the restart: %q, %v", got, err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// Until it is back, Waits fail with ErrListenDown (the server is up
	// again already here, so one attempt may do); then one says it is
	// back. A Wait on the broken connection cannot time out quietly.
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := l.Wait(ctx, time.Second)
		if err == nil && got == "" {
			break
		}
		if err != nil && !errors.Is(err, postgres.ErrListenDown) {
			t.Fatalf("a Wait after the restart: %v, want ErrListenDown or a wake-up", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reconnection in 30s: %v", err)
		}
	}
	notify("two")
	if got, err := l.Wait(ctx, 10*time.Second); got != "two" || err != nil {
		t.Fatalf("after the restart: %q, %v", got, err)
	}
}

// A Listener whose every new connection is cut at once (a server that
// crashes in a loop, a proxy that cuts connections) backs off between
// attempts instead of reconnecting, and waking its caller, in a loop.
func TestListenerBacksOff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dsn, err := server.NewDB(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	l, err := postgres.Listen(ctx, dsn, "agentctl_backoff")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	db, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	done := make(chan struct{})
	go func() { // cuts the listener's connection as soon as it is there
		defer close(done)
		for ctx.Err() == nil {
			db.SQL().ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
				WHERE query LIKE 'LISTEN %agentctl_backoff%' AND pid <> pg_backend_pid()`)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	wakes := 0
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		if _, err := l.Wait(ctx, 100*time.Millisecond); err == nil {
			wakes++
		}
	}
	cancel()
	<-done
	// 100ms, 200ms, 400ms, 800ms apart, jittered over their upper
	// halves: at most 7 in 2s. A hot loop makes hundreds.
	if wakes > 10 {
		t.Errorf("%d wake-ups in 2s of connections cut at once: no backoff", wakes)
	}
	t.Logf("%d wake-ups in 2s", wakes)
}
