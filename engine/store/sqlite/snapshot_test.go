//go:build linux

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// ownerWithRuns opens a database at path as its owner and stores n runs,
// left in its -wal while the owner keeps it open (closed at the test's
// end).
func ownerWithRuns(t *testing.T, path string, n int) *DB {
	t.Helper()
	ctx := context.Background()
	owner, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Close() })
	for i := range n {
		r := &store.Run{ID: "01A" + string(rune('A'+i)), Agent: "a", Status: store.Running, SpecHash: "h", State: []byte("{}")}
		if err := owner.CreateRun(ctx, r, []byte("s"), store.Lease{Owner: "p", TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	return owner
}

// runsIn counts the runs of the database file at path.
func runsIn(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM runs").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSnapshot: a snapshot of another's open database holds what is in
// its -wal, and neither the database nor its -wal changes.
func TestSnapshot(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.db")
	ownerWithRuns(t, path, 3)
	before := stateOf(path)
	if before.wal.size == 0 {
		t.Fatal("the owner's runs are not in a -wal: the test tests nothing")
	}
	dst := filepath.Join(dir, "copy.db")
	o := &opener{path: path, busy: time.Second, writable: func(string) bool { return false }}
	if err := o.snapshot(context.Background(), dst); err != nil {
		t.Fatal(err)
	}
	if n := runsIn(t, dst); n != 3 {
		t.Errorf("the snapshot holds %d runs, want the owner's 3", n)
	}
	if after := stateOf(path); after != before {
		t.Errorf("the database or its -wal changed: %+v, was %+v", after, before)
	}
}

// TestSnapshotChanged: a database another process writes while it is
// copied is not copied: ErrChanged, and no copy is left.
func TestSnapshotChanged(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.db")
	owner := ownerWithRuns(t, path, 1)
	dst := filepath.Join(dir, "copy.db")
	o := &opener{path: path, busy: time.Second, writable: func(string) bool { return false },
		beforeConnect: func() { // the owner writes once the copy has begun
			r := &store.Run{ID: "01B", Agent: "a", Status: store.Running, SpecHash: "h", State: []byte("{}")}
			if err := owner.CreateRun(ctx, r, []byte("s"), store.Lease{Owner: "p", TTL: time.Minute}); err != nil {
				t.Error(err)
			}
		},
	}
	if err := o.snapshot(ctx, dst); !errors.Is(err, ErrChanged) {
		t.Errorf("snapshot = %v, want ErrChanged", err)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Error("the copy of a database that changed is left")
	}
}
