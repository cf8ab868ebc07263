//go:build linux

package proc

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// targets kills marked processes, and whole groups only when their
// leader is gone or marked; never this process, nor its group whole.
func TestTargets(t *testing.T) {
	ps := []procInfo{
		{pid: 10, pgid: 10, marked: true}, // a command still running
		{pid: 11, pgid: 10},               // its child, environment cleared
		{pid: 21, pgid: 20, marked: true}, // a child whose command (20) is gone
		{pid: 22, pgid: 20},               // and its sibling
		{pid: 23, pgid: 20, dead: true},   // a zombie
		{pid: 30, pgid: 30},               // an unrelated leader...
		{pid: 31, pgid: 30, marked: true}, // ...whose group a marked process joined
		{pid: 32, pgid: 30},               // not killed
		{pid: 40, pgid: 40, marked: true}, // marked, in this process's group
		{pid: 41, pgid: 40},               // that group is not killed whole
		{pid: 99, pgid: 40, marked: true}, // this process
		{pid: 50, pgid: 50, dead: true},   // a zombie leader
		{pid: 51, pgid: 50, marked: true}, // its group goes
		{pid: 52, pgid: 50},               // with it
	}
	groups := map[int]bool{}
	got := targets(ps, groups, 99, 40)
	want := []int{10, 11, 21, 22, 31, 40, 51, 52}
	if !slices.Equal(got, want) {
		t.Errorf("targets = %v, want %v", got, want)
	}
	if g := slices.Sorted(func(yield func(int) bool) {
		for k := range groups {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(g, []int{10, 20, 50}) {
		t.Errorf("groups = %v, want [10 20 50]", g)
	}
	// A group stays a target once its marked members are gone.
	if got := targets([]procInfo{{pid: 22, pgid: 20}}, groups, 99, 40); !slices.Equal(got, []int{22}) {
		t.Errorf("second pass = %v, want [22]", got)
	}
}

// KillCall kills what a call's command left running, the child that
// cleared its environment included, and waits until it is gone.
func TestKillCall(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), "sh", "-c", `sleep 300 & echo $!; env -i sleep 300 & echo $!; exec sleep 300`)
	OwnGroup(cmd)
	cmd.Env = append(os.Environ(), CallEnv("RUN1", "call_1")...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	sc := bufio.NewScanner(out)
	var pids []int
	for len(pids) < 2 && sc.Scan() {
		pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	pids = append(pids, cmd.Process.Pid)
	go cmd.Wait() // reaps the command once killed

	if n, err := KillCall(t.Context(), "RUN1", "call_2"); n != 0 || err != nil {
		t.Errorf("another call: killed %d, %v", n, err)
	}
	start := time.Now()
	n, err := KillCall(t.Context(), "RUN1", "call_1")
	if err != nil || n != 3 {
		t.Errorf("KillCall: killed %d, %v; want 3", n, err)
	}
	for _, pid := range pids {
		if p, ok := readProc(pid, nil); ok && !p.dead {
			t.Errorf("process %d runs after KillCall returned", pid)
		}
	}
	t.Logf("killed in %s", time.Since(start))
}
