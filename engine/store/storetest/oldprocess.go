package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// OldSQL is what an agentctl of the schema before event type codes
// (SQLite 12, PostgreSQL 9) sends about events, in a backend's dialect:
// it may still be running when another process upgrades the database.
type OldSQL struct {
	Events string // the events of run $1 after id $2, in order: id, type
	Append string // two events of run $1: types $2 and $3
	Delete string // the events of run $1 (prune)
	// DeleteWorks is whether Delete still deletes through the view
	// (PostgreSQL's views take a DELETE; SQLite's refuse it, loudly).
	DeleteWorks bool
}

// OldProcess checks that such a process reads events through the view
// events by name, as it read the table, whatever the new code stored,
// and that what it writes the new code reads: no type is read as a code,
// no event is lost.
func OldProcess(t *testing.T, s store.Store, db *sql.DB, old OldSQL) {
	t.Helper()
	ctx := context.Background()
	l := store.Lease{Owner: "p", TTL: time.Minute}
	r := &store.Run{ID: "01NEW", Agent: "a", Status: store.Running, SpecHash: "h", State: []byte("{}")}
	if err := s.CreateRun(ctx, r, []byte("s"), l); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(ctx, l, r, nil, store.Event{RunID: "01NEW", Type: "tool-call", Data: []byte(`{"n":1}`)},
		store.Event{RunID: "01NEW", Type: "tool-call-approval", Data: []byte(`{"n":2}`)}); err != nil {
		t.Fatal(err)
	}
	types := func() []string {
		rows, err := db.QueryContext(ctx, old.Events, "01NEW", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id int64
			var ty string
			if err := rows.Scan(&id, &ty); err != nil {
				t.Fatal(err)
			}
			out = append(out, ty)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := types(); !slices.Equal(got, []string{"tool-call", "tool-call-approval"}) {
		t.Errorf("an old process reads the types %q, want them by name", got)
	}
	if _, err := db.ExecContext(ctx, old.Append, "01NEW", "decision", "stalled"); err != nil {
		t.Fatalf("an old process appends events: %v", err)
	}
	want := []string{"tool-call", "tool-call-approval", "decision", "stalled"}
	if got := types(); !slices.Equal(got, want) {
		t.Errorf("an old process reads the types %q, want %q", got, want)
	}
	evs, err := s.Events(ctx, "01NEW", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, string(e.Type))
	}
	if !slices.Equal(got, want) {
		t.Errorf("events after an old process's: %q, want %q", got, want)
	}
	_, err = db.ExecContext(ctx, old.Delete, "01NEW")
	n := len(types())
	switch {
	case old.DeleteWorks && (err != nil || n != 0):
		t.Errorf("an old process's prune: %v, %d events left, want none", err, n)
	case !old.DeleteWorks && (err == nil || n != 4):
		t.Errorf("an old process's prune: %v, %d events left, want it refused and 4", err, n)
	}
}

// Upgrader is a store that says which schema version its open found and
// migrated from.
type Upgrader interface {
	store.Store
	Schema() (found, known int)
	UpgradedFrom() int
}

// RacingUpgrade opens a database at schema version old from four
// goroutines at once, each its own connection pool as another process
// would be: every open ends at the latest schema, and exactly one says it
// upgraded from old; the others found it done (agentctl migrate says
// "upgraded" once).
func RacingUpgrade(t *testing.T, old int, open func() (Upgrader, error)) {
	t.Helper()
	const n = 4
	froms := make(chan int, n)
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		go func() {
			<-start
			db, err := open()
			if err != nil {
				errs <- err
				return
			}
			defer db.Close()
			if found, known := db.Schema(); found != known {
				errs <- fmt.Errorf("schema %d of %d after open", found, known)
				return
			}
			froms <- db.UpgradedFrom()
		}()
	}
	close(start)
	var got []int
	for range n {
		select {
		case err := <-errs:
			t.Fatal(err)
		case f := <-froms:
			got = append(got, f)
		}
	}
	if slices.Sort(got); got[0] != old || got[1] == old {
		t.Errorf("racing opens upgraded from %v, want %d once", got, old)
	}
}
