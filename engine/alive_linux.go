//go:build linux

package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// selfIdentity reads this process's identity from /proc; it is unknown
// when /proc is not this process's own (a /proc of another PID
// namespace).
func selfIdentity() identity {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return identity{}
	}
	ns, err := os.Readlink("/proc/self/ns/pid") // "pid:[4026531836]"
	if err != nil {
		return identity{}
	}
	pid, start, err := statFile("/proc/self/stat")
	if err != nil || pid != os.Getpid() {
		return identity{}
	}
	b := strings.ReplaceAll(strings.TrimSpace(string(boot)), "-", "")
	n := strings.TrimSuffix(strings.TrimPrefix(ns, "pid:["), "]")
	if len(b) < 12 || n == "" || n == ns {
		return identity{}
	}
	return identity{Boot: b[:12], NS: n, Start: start}
}

// readStart reads the start time of the process pid. A pid /proc does
// not show is absent only if the kernel says so too: /proc mounted with
// hidepid hides other users' processes.
func readStart(pid int) (uint64, bool, error) {
	_, start, err := statFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		if kerr := syscall.Kill(pid, 0); !errors.Is(kerr, syscall.ESRCH) {
			return 0, false, fmt.Errorf("process %d exists but /proc hides it", pid)
		}
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return start, true, nil
}

// statFile reads a /proc/PID/stat file: the pid (field 1) and the start
// time (field 22). The command name (field 2) is in parentheses and may
// hold spaces and parentheses: the fields after it follow the last ")".
func statFile(path string) (pid int, start uint64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	return parseStat(string(b))
}
