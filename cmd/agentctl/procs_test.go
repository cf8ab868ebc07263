package main

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// pidgone implements `pidgone FILE`: the process whose pid FILE holds is
// gone (or a zombie: killed, not yet reaped by whoever inherited it)
// within 10s; `! pidgone FILE`: it still lives. A kill is sent before the
// command under test exits; this waits for the kernel to carry it out.
func pidgone(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: pidgone FILE")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[0])))
	ts.Check(err)
	for deadline := time.Now().Add(10 * time.Second); ; {
		dead := processDead(pid)
		switch {
		case dead && neg:
			ts.Fatalf("process %d is gone", pid)
		case dead || neg:
			return
		case time.Now().After(deadline):
			_ = syscall.Kill(pid, syscall.SIGKILL)
			ts.Fatalf("process %d was left running", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// processDead reports whether pid is no process, or a zombie.
func processDead(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	// The state follows the command name in parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && len(stat) > i+2 && strings.ContainsRune("ZX", rune(stat[i+2]))
}
