//go:build unix

package sqlite

import (
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// writable reports whether this process owns the database file and may
// write its directory: the -wal and -shm files it would create there are
// then its own to leave.
func writable(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid() && unix.Access(filepath.Dir(path), unix.W_OK) == nil
}
