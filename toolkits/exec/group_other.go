//go:build !unix

package exec

import osexec "os/exec"

// ownGroup leaves cmd as it is: without process groups, only the command
// itself is killed when its context ends.
func ownGroup(*osexec.Cmd) {}

// killGroup does nothing without process groups.
func killGroup(*osexec.Cmd) {}
