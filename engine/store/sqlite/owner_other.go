//go:build !unix

package sqlite

// writable reports whether this process may leave -wal and -shm files
// beside the database: assumed where agentctl cannot tell.
func writable(string) bool { return true }
