package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/engine/store"
)

// SQLite's locks on a database file (os_unix.c): a reader holds a read
// lock on the shared range; the last connection to close takes a write
// lock on it before it checkpoints and removes the -wal and -shm.
const (
	pendingByte = 0x40000000
	sharedFirst = pendingByte + 2
	sharedSize  = 510
)

// holdReader takes a reader's lock on the database at path, as SQLite's
// own readers hold it, and returns its release: while it is held, the
// last writer to close leaves the -wal and -shm in place. The lock is an
// open file description lock, so that this process's SQLite connections,
// whose locks are POSIX record locks, neither merge with it nor lose
// theirs when it is released. It waits up to wait for a closing writer.
// A file this process cannot open is left for SQLite to report.
func holdReader(ctx context.Context, path string, wait time.Duration) (func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return func() {}, nil
	}
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart, Start: sharedFirst, Len: sharedSize}
	deadline := time.Now().Add(wait)
	for {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
		if err == nil {
			return func() { f.Close() }, nil // closing the description releases its lock
		}
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) || time.Now().After(deadline) {
			f.Close()
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
				return nil, fmt.Errorf("%w: another process held the database for over %s while closing it", &store.BusyError{Waited: wait}, wait)
			}
			return func() {}, nil // no such locks here (an old kernel, a network file system): SQLite's own checks remain
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
