//go:build !unix

package main

import "os"

// fileOwner returns the uid that owns a file: unknown where agentctl
// cannot tell, so nothing that depends on it is honoured.
func fileOwner(os.FileInfo) (int, bool) { return -1, false }
