//go:build linux

package proc

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procInfo is what /proc tells of one process.
type procInfo struct {
	pid, pgid int
	dead      bool // a zombie: it runs no more
	marked    bool // its environment holds every marker
}

// killCall kills, until none is left, the processes KillCall describes;
// markers are the call's CallEnv. A kernel never gives a new process
// the pid of a group that still has members, so a group found here
// cannot be another's by the time it is killed.
func killCall(ctx context.Context, markers []string) (int, error) {
	self, selfGroup := os.Getpid(), syscall.Getpgrp()
	groups := map[int]bool{}
	signalled := map[int]bool{}
	for {
		ps, err := listProcs(markers)
		if err != nil {
			return len(signalled), err
		}
		pids := targets(ps, groups, self, selfGroup)
		if len(pids) == 0 {
			return len(signalled), nil
		}
		for g := range groups {
			_ = syscall.Kill(-g, syscall.SIGKILL)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			signalled[pid] = true
		}
		select {
		case <-ctx.Done():
			return len(signalled), fmt.Errorf("processes %v still run after SIGKILL: %w", pids, context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// targets returns the live processes of ps to kill: the marked ones and
// the members of groups, to which it adds the group of each marked
// process whose leader is gone or marked too. It never returns self,
// nor adds its own group.
func targets(ps []procInfo, groups map[int]bool, self, selfGroup int) []int {
	byPID := make(map[int]procInfo, len(ps))
	for _, p := range ps {
		byPID[p.pid] = p
	}
	for _, p := range ps {
		if !p.marked || p.dead || p.pgid == selfGroup || p.pgid <= 1 {
			continue
		}
		if leader, ok := byPID[p.pgid]; !ok || leader.dead || leader.marked {
			groups[p.pgid] = true
		}
	}
	var pids []int
	for _, p := range ps {
		if !p.dead && p.pid != self && (p.marked || groups[p.pgid]) {
			pids = append(pids, p.pid)
		}
	}
	return pids
}

// listProcs reads every process /proc shows, and whether its
// environment holds all of markers. A process that ends meanwhile, or
// whose environment is not ours to read, is left out or unmarked.
func listProcs(markers []string) ([]procInfo, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var ps []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid, markers); ok {
			ps = append(ps, p)
		}
	}
	return ps, nil
}

// readProc reads one process's state and group from /proc/PID/stat and,
// when it is alive, its environment from /proc/PID/environ.
func readProc(pid int, markers []string) (procInfo, bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	// The fields after the command name, in parentheses that it may
	// hold too: state (field 3), ppid, pgrp (field 5).
	s := string(b)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return procInfo{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 3 {
		return procInfo{}, false
	}
	pgid, err := strconv.Atoi(f[2])
	if err != nil {
		return procInfo{}, false
	}
	p := procInfo{pid: pid, pgid: pgid, dead: f[0] == "Z" || f[0] == "X"}
	if !p.dead {
		if env, err := os.ReadFile(dir + "/environ"); err == nil {
			vars := strings.Split(string(env), "\x00")
			p.marked = !slices.ContainsFunc(markers, func(m string) bool { return !slices.Contains(vars, m) })
		}
	}
	return p, true
}
