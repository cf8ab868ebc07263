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

// backupWithoutShm copies the database at path and its -wal, not its
// -shm, into a new directory, the database file with mode perm.
func backupWithoutShm(t *testing.T, path string, perm os.FileMode) string {
	t.Helper()
	backup := filepath.Join(t.TempDir(), "b.db")
	for _, suffix := range []string{"-wal", ""} {
		b, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if suffix == "" {
			mode = perm
		}
		if err := os.WriteFile(backup+suffix, b, mode); err != nil {
			t.Fatal(err)
		}
	}
	return backup
}

// TestOwnReadOnlyFileWithWAL: a database its owner may not write (mode
// 0444) in a directory it may, with writes in its -wal and no -shm, is
// read whole, as the owner reads it: by a read-only open and by a
// snapshot, not as the file alone is on disk.
func TestOwnReadOnlyFileWithWAL(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	ownerWithRuns(t, path, 3)
	backup := backupWithoutShm(t, path, 0o444)
	if Writable(backup) {
		t.Error("Writable: a file of mode 0444 is not to be upgraded in place")
	}
	db, err := Open(ctx, backup, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.SQL().QueryRowContext(ctx, "SELECT count(*) FROM runs").Scan(&n); err != nil || n != 3 {
		t.Errorf("a read-only open sees %d runs (%v), want the -wal's 3", n, err)
	}
	db.Close()
	dst := filepath.Join(t.TempDir(), "copy.db")
	if err := Snapshot(ctx, backup, dst, Options{}); err != nil {
		t.Fatal(err)
	}
	if n := runsIn(t, dst); n != 3 {
		t.Errorf("the snapshot holds %d runs, want the -wal's 3", n)
	}
}

// TestWritable: a database is upgraded in place only if its owner may
// write it by its mode, root too.
func TestWritable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	for _, c := range []struct {
		perm os.FileMode
		want bool
	}{{0o644, true}, {0o600, true}, {0o444, false}, {0o044, false}} {
		if err := os.WriteFile(path, nil, c.perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, c.perm); err != nil {
			t.Fatal(err)
		}
		if got := Writable(path); got != c.want {
			t.Errorf("Writable of a file of mode %v = %v, want %v", c.perm, got, c.want)
		}
	}
}
