//go:build linux

package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// TestForeignReaderRacesLastClose: a reader of another's database that
// finds the owner's -wal open and the owner closing it before its own
// connection opens creates no -wal or -shm of its own (the CI failure of
// list_reads_other_user: a follower left a -shm owned by it). The owner's
// files stay, the same files, and the reader sees what the owner wrote.
func TestForeignReaderRacesLastClose(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	owner, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &store.Run{ID: "01A", Agent: "a", Status: store.Running, SpecHash: "h", State: []byte("{}")}
	if err := owner.CreateRun(ctx, r, []byte("s"), store.Lease{Owner: "p", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	wal, shm := inode(t, path+"-wal"), inode(t, path+"-shm")
	o := &opener{path: path, busy: time.Second,
		writable:      func(string) bool { return false }, // as another OS user
		beforeConnect: func() { owner.Close() },           // the last writer closes meanwhile
	}
	db, _, err := o.open(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM runs WHERE id = '01A'").Scan(&n); err != nil || n != 1 {
		t.Errorf("the reader sees %d runs 01A (%v), want the owner's 1", n, err)
	}
	db.Close()
	if got := inode(t, path+"-wal"); got != wal {
		t.Errorf("-wal is inode %d, want the owner's %d: the reader made its own", got, wal)
	}
	if got := inode(t, path+"-shm"); got != shm {
		t.Errorf("-shm is inode %d, want the owner's %d: the reader made its own", got, shm)
	}
}

// inode is the inode number of the file at path, 0 when there is none.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}
