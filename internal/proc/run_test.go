package proc

import (
	"errors"
	"os/exec"
	"testing"
)

// Run tells started what Start returned, and waits only for a command
// that started.
func TestRun(t *testing.T) {
	var got []error
	ok, err := Run(exec.Command("/nonexistent/agentctl-test"), func(err error) { got = append(got, err) })
	if ok || err == nil || len(got) != 1 || !errors.Is(got[0], err) {
		t.Errorf("missing program: ok=%v err=%v started with %v", ok, err, got)
	}
	got = nil
	cmd := exec.CommandContext(t.Context(), "sh", "-c", "exit 3")
	OwnGroup(cmd)
	ok, err = Run(cmd, func(err error) { got = append(got, err) })
	var exit *exec.ExitError
	if !ok || !errors.As(err, &exit) || exit.ExitCode() != 3 || len(got) != 1 || got[0] != nil {
		t.Errorf("exit 3: ok=%v err=%v started with %v", ok, err, got)
	}
}
