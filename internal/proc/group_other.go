//go:build !unix

package proc

import "os/exec"

// OwnGroup leaves cmd as it is: without process groups, only the command
// itself is killed when its context ends.
func OwnGroup(*exec.Cmd) {}

// KillGroup does nothing without process groups.
func KillGroup(*exec.Cmd) {}
