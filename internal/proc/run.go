package proc

import (
	"os/exec"
	"runtime"
)

// Run starts cmd, calls started with what Start returned, and, when cmd
// started, waits for it and kills what it left in its group (KillGroup).
// ok reports whether cmd started; err is Start's error if not, else
// Wait's.
//
// The calling goroutine stays locked to its OS thread from Start until
// the command has exited: on Linux the command's parent-death signal
// fires when the thread that forked it ends, and a thread this goroutine
// holds locked is never handed to another goroutine that could end it.
// The goroutine unlocks before it returns, so the thread goes back to
// the pool instead of being ended.
func Run(cmd *exec.Cmd, started func(error)) (ok bool, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err = cmd.Start()
	started(err)
	if err != nil {
		return false, err
	}
	err = cmd.Wait()
	KillGroup(cmd)
	return true, err
}
