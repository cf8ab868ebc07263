package engine

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// A lease holder names the process that holds a run:
// "host:pid:token:BOOT.PIDNS.START". BOOT is the first 12 hex digits of
// the kernel's boot id, PIDNS the inode of the process's PID namespace
// and START its start time in clock ticks since boot (/proc/PID/stat
// field 22). Together they identify one process for the life of the
// machine, so another process can tell for sure that the holder is dead
// (the kernel that ran it is still up, the PID namespace is its own, and
// no process with that pid and start time exists), instead of taking a
// live process in another PID namespace, or a reused pid, for dead.
// Holders written before this, "host:pid:token", and holders whose
// identity could not be read (no /proc), are never provably dead: their
// runs are taken over when their lease runs out.

// identity is what identifies a process beyond its pid; the zero value
// is unknown.
type identity struct {
	Boot  string // the boot id's first 12 hex digits
	NS    string // the PID namespace's inode
	Start uint64 // start time in clock ticks since boot
}

func (i identity) known() bool { return i.Boot != "" && i.NS != "" && i.Start != 0 }

// holder is a parsed lease holder.
type holder struct {
	Host string
	PID  int
	ID   identity
}

// newHolder names this process as a lease holder, with token to tell
// apart engines of one process.
func newHolder(host string, pid int, token string, id identity) string {
	s := fmt.Sprintf("%s:%d:%s", host, pid, token)
	if id.known() {
		s += fmt.Sprintf(":%s.%s.%d", id.Boot, id.NS, id.Start)
	}
	return s
}

// parseHolder reads a lease holder; ok is false for a string that is not
// one. A holder without an identity (an older agentctl's) has a zero ID.
func parseHolder(s string) (h holder, ok bool) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 && len(parts) != 4 {
		return h, false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 || parts[0] == "" {
		return h, false
	}
	h.Host, h.PID = parts[0], pid
	if len(parts) == 4 {
		f := strings.Split(parts[3], ".")
		if len(f) != 3 {
			return h, false
		}
		start, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return h, false
		}
		h.ID = identity{Boot: f[0], NS: f[1], Start: start}
	}
	return h, true
}

// procStat reads a process's start time: exists is false when no process
// has the pid (in our PID namespace); err when it cannot tell.
type procStat func(pid int) (start uint64, exists bool, err error)

// provablyDead reports whether holder h is a process that no longer
// runs, judged by a process of this host with identity self: only when
// h was identified (boot id, PID namespace, start time), on this host,
// this boot and in our PID namespace, and no process has its pid, or the
// one that has it started at another time. Anything else, including an
// unreadable process table, is not proof: the caller waits for the
// lease to run out.
func provablyDead(h holder, host string, self identity, stat procStat) bool {
	if !h.ID.known() || !self.known() || h.Host != host || h.ID.Boot != self.Boot || h.ID.NS != self.NS {
		return false
	}
	start, exists, err := stat(h.PID)
	switch {
	case err != nil:
		return false
	case !exists:
		return true
	}
	return start != h.ID.Start
}

// HolderDead reports whether a run's lease holder (store.Run.Owner) is
// provably a process that no longer runs (see provablyDead); for any
// other holder, the lease has to run out.
func HolderDead(owner string) bool { return newJudge().dead(owner) }

// judge tells dead lease holders as HolderDead does, with this
// process's host name and identity read once: a worker pool judges the
// holders of its database each poll.
type judge struct {
	host string
	self identity
	stat procStat
}

func newJudge() judge {
	host, _ := os.Hostname()
	return judge{host: host, self: selfIdentity(), stat: readStart}
}

// dead reports whether owner is provably a process that no longer runs.
func (j judge) dead(owner string) bool {
	h, ok := parseHolder(owner)
	return ok && provablyDead(h, j.host, j.self, j.stat)
}

// able reports whether this process can prove any holder dead: it knows
// its own identity (see provablyDead).
func (j judge) able() bool { return j.self.known() }

// parseStat reads the pid (field 1) and start time (field 22) of a
// /proc/PID/stat line.
func parseStat(s string) (pid int, start uint64, err error) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return 0, 0, fmt.Errorf("stat %q: no command name", s)
	}
	if pid, err = strconv.Atoi(strings.TrimSpace(s[:open])); err != nil {
		return 0, 0, fmt.Errorf("stat: pid: %w", err)
	}
	f := strings.Fields(s[end+1:]) // from field 3
	if len(f) < 20 {
		return 0, 0, fmt.Errorf("stat: %d fields", len(f)+2)
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("stat: start time: %w", err)
	}
	return pid, start, nil
}
