//go:build unix && !linux

package proc

import "syscall"

// groupAttr puts a command in a process group of its own. Without a
// parent-death signal here, a command outlives an agentctl killed with
// SIGKILL.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
