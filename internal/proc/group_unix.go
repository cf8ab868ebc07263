//go:build unix

package proc

import (
	"os/exec"
	"syscall"
)

// OwnGroup starts cmd in a process group of its own, whose members are
// all killed when its context ends. On Linux the kernel also kills the
// command when the thread that started it dies (see groupAttr): start
// it with Run, which keeps that thread alive until the command exits.
func OwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = groupAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// KillGroup kills what is left of cmd's process group once the command
// has exited: the processes it started and left behind.
func KillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
