//go:build unix

package proc

import (
	"os/exec"
	"syscall"
)

// OwnGroup starts cmd in a process group of its own, whose members are
// all killed when its context ends.
func OwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// KillGroup kills what is left of cmd's process group once the command
// has exited: the processes it started and left behind.
func KillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
