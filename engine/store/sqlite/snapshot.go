package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/agentctl/agentctl/engine/store"
)

// ErrChanged reports that a database changed while Snapshot copied it:
// another process wrote it, and the copy may mix its states.
var ErrChanged = errors.New("the database changed while it was copied")

// Snapshot writes to dst, a file that must not exist, a copy of the
// database at path as it is (the writes in its -wal included), without
// writing path, whoever owns it: SQLite's VACUUM INTO from a read-only
// connection, which creates no file beside it (but the -shm that its
// owner, alone, may make to read the -wal). A database whose -wal holds
// writes this process cannot read (its -shm missing, or either
// unreadable) is refused rather than copied without them; one that
// another process writes while it is copied fails with ErrChanged (the
// copy, which may mix two states, is removed).
func Snapshot(ctx context.Context, path, dst string, opts Options) error {
	// Read as another user would, creating no file beside it, unless
	// its -wal holds writes that only a connection with a -shm can read
	// and this process may make one there (the owner of a file it may
	// not write).
	withWAL := fileStateOf(path+"-wal").size > 0
	o := &opener{path: path, busy: opts.busy(), writable: func(p string) bool { return withWAL && writable(p) }}
	return o.snapshot(ctx, dst)
}

// snapshot is Snapshot of o's database, read as by another user.
func (o *opener) snapshot(ctx context.Context, dst string) error {
	path := o.path
	before := stateOf(path)
	db, _, err := o.open(ctx, true)
	if err != nil {
		if db != nil {
			db.Close()
		}
		return fmt.Errorf("open database %s: %w", path, o.classify(err))
	}
	defer db.Close()
	if o.mode == readAsIs && before.wal.size > 0 {
		return fmt.Errorf("%w: %s-wal holds writes that this user cannot read (its -shm is missing, or one of them is unreadable): "+
			"copy it as its owner, or once its owner's processes have closed it", store.ErrUnavailable, path)
	}
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		os.Remove(dst)
		if before != stateOf(path) {
			return fmt.Errorf("%w: %v", ErrChanged, err)
		}
		// Reading the database worked (it opened), so what failed is
		// most likely the copy's writing: say where that is.
		return fmt.Errorf("copy database %s to %s: %w", path, dst, (&opener{path: dst}).classify(err))
	}
	if before != stateOf(path) {
		os.Remove(dst)
		return ErrChanged
	}
	return nil
}

// fileState is what a write to a file changes in its metadata: its size
// and modification time, and its inode when it is made anew. (Not its
// change time: SQLite run as root chowns a -wal it opens, even to read.)
// A write within the same tick of the file system's clock as the one
// before it, before the copy began, leaves it as it was.
type fileState struct {
	size  int64
	mtime int64 // nanoseconds since 1970
	ino   uint64
}

// dbState is a database file's state and its -wal's (zero if absent).
type dbState struct{ db, wal fileState }

func stateOf(path string) dbState {
	return dbState{db: fileStateOf(path), wal: fileStateOf(path + "-wal")}
}
