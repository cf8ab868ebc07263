//go:build linux

package proc

import "syscall"

// groupAttr puts a command in a process group of its own, with SIGKILL
// as its parent-death signal: killed with agentctl (kill -9 included),
// it dies too instead of finishing its side effect unobserved.
//
// The kernel sends that signal when the thread that forked the command
// exits, not the process (go.dev/issue/27505): Run keeps the starting
// goroutine locked to its thread until the command has exited, so no
// other goroutine can take that thread and end it by exiting locked.
//
// Only the command itself gets the signal: processes it starts in its
// group outlive agentctl. The engine kills those when it recovers the
// call (KillCall).
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
