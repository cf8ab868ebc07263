//go:build linux

package exec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/toolkits"
)

// gone waits until the process pid is no more (or a zombie: killed, not
// yet reaped by whoever inherited it), failing after a while. The kill is
// sent before Do returns; this waits for the kernel to carry it out.
func gone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		// The state follows the command name in parentheses.
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && len(stat) > i+2 && strings.ContainsRune("ZX", rune(stat[i+2])) {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d left behind: %s", pid, stat)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A command that leaves a child running is done when it exits: its
// result is its own exit status, and the child is killed.
func TestChildLeftBehindIsKilled(t *testing.T) {
	pid := filepath.Join(t.TempDir(), "bg.pid")
	out, res := run(t, action(t, 0, "sh", "-c", `sleep 300 & echo $! > "$0"; echo started`, pid), nil)
	if res.Failed || out.ExitCode != 0 || out.Stdout != "started\n" || out.Error != "" {
		t.Errorf("got %+v failed=%v", out, res.Failed)
	}
	gone(t, pid)
}

// On timeout the whole group is killed, the command's children too.
func TestTimeoutKillsTheGroup(t *testing.T) {
	pid := filepath.Join(t.TempDir(), "bg.pid")
	out, res := run(t, action(t, 2*time.Second, "sh", "-c", `sleep 300 & echo $! > "$0"; sleep 100`, pid), nil)
	if !res.Failed || out.ExitCode != -1 || !strings.Contains(out.Error, "timed out after 2s") {
		t.Errorf("got %+v", out)
	}
	gone(t, pid)
}

// Stopped (the context ends: agentctl is interrupted), the group is
// killed and the call is an error, not a failed result told to the model.
func TestStoppedKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// The command writes its child's pid into the fifo once started.
		b, _ := os.ReadFile(fifo)
		_ = os.WriteFile(filepath.Join(dir, "bg.pid"), b, 0o600)
		cancel()
	}()
	a := action(t, 0, "sh", "-c", `sleep 300 & echo $! > "$0"; sleep 100`, fifo)
	_, err := a.Do(ctx, toolkits.Call{RunID: "R", CallID: "C"})
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want one wrapping context.Canceled", err)
	}
	gone(t, filepath.Join(dir, "bg.pid"))
}
