//go:build !unix

package engine

// processAlive cannot tell here: a lease is then only taken over once it
// has run out.
func processAlive(int) bool { return true }
