package proc

import (
	"context"
	"errors"
	"time"
)

// CallEnv is the environment that marks a tool call's command: agentctl
// passes it, the command reads it, and its children inherit it, so that
// KillCall finds what a call left running.
func CallEnv(runID, callID string) []string {
	return []string{"AGENTCTL_RUN_ID=" + runID, "AGENTCTL_CALL_ID=" + callID}
}

// killWait bounds how long KillCall waits for killed processes to go.
const killWait = 10 * time.Second

// KillCall kills what a tool call's command left running on this host,
// and returns once it is gone: every process marked with the call's
// CallEnv, and every process group one of them is in whose leader is
// gone or marked too (processes that dropped the environment but stayed
// in the command's group). It reports how many processes it signalled.
// A group led by an unmarked live process is not killed whole: only its
// marked members are. Where processes cannot be listed (no /proc),
// nothing is done.
func KillCall(ctx context.Context, runID, callID string) (int, error) {
	if runID == "" || callID == "" {
		return 0, errors.New("kill a call's processes: no run or call id")
	}
	ctx, cancel := context.WithTimeout(ctx, killWait)
	defer cancel()
	return killCall(ctx, CallEnv(runID, callID))
}
