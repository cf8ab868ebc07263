//go:build !unix

package main

import "io"

// isTerminal reports whether w is a terminal: never, where agentctl
// cannot tell.
func isTerminal(io.Writer) bool { return false }
