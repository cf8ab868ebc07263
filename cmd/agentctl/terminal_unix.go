//go:build unix

package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether w is a terminal (not a pipe, a file or
// /dev/null).
func isTerminal(w io.Writer) bool {
	if p, ok := w.(painted); ok {
		w = p.Writer
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}
