//go:build !unix

package sqlite

import "os"

// writable reports whether this process may leave -wal and -shm files
// beside the database: assumed where agentctl cannot tell.
func writable(string) bool { return true }

// upgradable reports whether the file's mode lets it be written.
func upgradable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().Perm()&0o200 != 0
}

// fileStateOf is the metadata a write to the file at path changes (its
// size and modification time here); the zero fileState if there is none.
func fileStateOf(path string) fileState {
	fi, err := os.Stat(path)
	if err != nil {
		return fileState{}
	}
	return fileState{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}
