//go:build unix

package sqlite

import (
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// writable reports whether this process owns the database file and may
// write its directory (that of the file a symbolic link names, where
// SQLite puts them): the -wal and -shm files it would create there are
// then its own to leave.
func writable(path string) bool {
	path, fi, err := resolve(path)
	return err == nil && ownsWithDir(path, fi)
}

// resolve returns the file a path names, through symbolic links, and its
// metadata.
func resolve(path string) (string, os.FileInfo, error) {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	fi, err := os.Stat(path)
	return path, fi, err
}

// ownsWithDir reports whether this process owns the file at path, whose
// metadata is fi, and may write its directory.
func ownsWithDir(path string, fi os.FileInfo) bool {
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
		mtime: st.Mtim.Nano(),
		ino:   st.Ino,
	}
}

// upgradable is writable, and the file's mode lets its owner write it
// (root too is held to that), on a file system mounted to be written.
func upgradable(path string) bool {
	path, fi, err := resolve(path)
	return err == nil && fi.Mode().Perm()&0o200 != 0 && unix.Access(path, unix.W_OK) == nil && ownsWithDir(path, fi)
}
