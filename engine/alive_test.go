package engine

import (
	"errors"
	"os"
	"testing"
)

// TestProvablyDead: a lease holder is dead for sure only when it was
// identified on this host, this boot and in our PID namespace, and its
// pid is free or taken by a process that started at another time.
func TestProvablyDead(t *testing.T) {
	self := identity{Boot: "0123456789ab", NS: "4026531836", Start: 500}
	holderID := identity{Boot: "0123456789ab", NS: "4026531836", Start: 1000}
	live := func(pid int) (uint64, bool, error) { return 1000, true, nil }
	gone := func(pid int) (uint64, bool, error) { return 0, false, nil }
	reused := func(pid int) (uint64, bool, error) { return 2000, true, nil }
	unreadable := func(pid int) (uint64, bool, error) { return 0, false, errors.New("permission denied") }
	for _, c := range []struct {
		name string
		h    holder
		stat procStat
		want bool
	}{
		{"gone", holder{"h", 42, holderID}, gone, true},
		{"pid reused by a later process", holder{"h", 42, holderID}, reused, true},
		{"alive", holder{"h", 42, holderID}, live, false},
		{"process table unreadable", holder{"h", 42, holderID}, unreadable, false},
		{"other host", holder{"other", 42, holderID}, gone, false},
		{"other boot", holder{"h", 42, identity{Boot: "ba9876543210", NS: holderID.NS, Start: 1000}}, gone, false},
		{"other PID namespace", holder{"h", 42, identity{Boot: holderID.Boot, NS: "4026532999", Start: 1000}}, gone, false},
		{"older agentctl, no identity", holder{"h", 42, identity{}}, gone, false},
	} {
		if got := provablyDead(c.h, "h", self, c.stat); got != c.want {
			t.Errorf("%s: provablyDead = %v, want %v", c.name, got, c.want)
		}
	}
	// We cannot identify ourselves (no /proc): nothing is proof.
	if provablyDead(holder{"h", 42, holderID}, "h", identity{}, gone) {
		t.Error("unknown self: provablyDead = true")
	}
}

// TestHolderFormat: a holder round-trips, an older agentctl's parses with
// no identity, and anything else is not a holder.
func TestHolderFormat(t *testing.T) {
	id := identity{Boot: "0123456789ab", NS: "4026531836", Start: 123456}
	s := newHolder("web-1", 77, "a1b2c3d4e5f6", id)
	if s != "web-1:77:a1b2c3d4e5f6:0123456789ab.4026531836.123456" {
		t.Fatalf("newHolder = %q", s)
	}
	h, ok := parseHolder(s)
	if !ok || h.Host != "web-1" || h.PID != 77 || h.ID != id {
		t.Errorf("parseHolder(%q) = %+v, %v", s, h, ok)
	}
	if h, ok := parseHolder("web-1:77:a1b2c3d4e5f6"); !ok || h.ID.known() {
		t.Errorf("old holder: %+v, %v", h, ok)
	}
	if newHolder("web-1", 77, "tok", identity{}) != "web-1:77:tok" {
		t.Error("a holder with no identity")
	}
	for _, bad := range []string{"", "x", "h:0:t", "h:p:t", ":1:t", "h:1:t:a.b", "h:1:t:a.b.c", "a:b:c:d:e"} {
		if _, ok := parseHolder(bad); ok {
			t.Errorf("parseHolder(%q) ok", bad)
		}
	}
}

func TestParseStat(t *testing.T) {
	line := "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100 ...\n"
	pid, start, err := parseStat(line)
	if err != nil || pid != 4242 || start != 987654 {
		t.Errorf("parseStat = %d, %d, %v", pid, start, err)
	}
	if _, _, err := parseStat("12 (x) S 1"); err == nil {
		t.Error("short stat parsed")
	}
}

// TestSelfIdentity: on Linux this process identifies itself, and a
// holder naming it is alive, one with another start time dead.
func TestSelfIdentity(t *testing.T) {
	self := selfIdentity()
	if !self.known() {
		t.Skip("no /proc of our own here")
	}
	host, _ := os.Hostname()
	me := holder{host, os.Getpid(), self}
	if provablyDead(me, host, self, readStart) {
		t.Error("this process judged dead")
	}
	me.ID.Start++
	if !provablyDead(me, host, self, readStart) {
		t.Error("a holder with our pid and another start time judged alive")
	}
}
