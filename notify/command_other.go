//go:build !unix

package notify

import "os/exec"

// ownGroup leaves cmd as it is: without process groups, only the
// program itself is killed when its context ends.
func ownGroup(*exec.Cmd) {}

// killGroup does nothing without process groups.
func killGroup(*exec.Cmd) {}
