//go:build unix

package exec

import (
	osexec "os/exec"
	"syscall"
)

// ownGroup starts cmd in a process group of its own, whose members are
// all killed when its context ends.
func ownGroup(cmd *osexec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// killGroup kills what is left of cmd's process group once the command
// has exited: the processes it started and left behind.
func killGroup(cmd *osexec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
