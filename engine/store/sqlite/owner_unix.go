//go:build unix

package sqlite

import (
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// writable reports whether this process owns the database file and may
// write its directory (that of the file a symbolic link names, where
// SQLite puts them): the -wal and -shm files it would create there are
// then its own to leave.
func writable(path string) bool {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid() && unix.Access(filepath.Dir(path), unix.W_OK) == nil
}

// fileStateOf is the metadata a write to the file at path changes; the
// zero fileState if there is none.
func fileStateOf(path string) fileState {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return fileState{}
	}
	return fileState{
		size:  st.Size,
		mtime: time.Unix(st.Mtim.Unix()),
		ino:   st.Ino,
	}
}

// upgradable is writable, and the file's mode lets its owner write it
// (root too is held to that), on a file system mounted to be written.
func upgradable(path string) bool {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().Perm()&0o200 != 0 && unix.Access(path, unix.W_OK) == nil && writable(path)
}
