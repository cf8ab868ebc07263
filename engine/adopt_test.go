package engine

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// TestAdoptDeadHolders: a pool ends the leases of the holders that are
// provably dead on this host (a pid gone, a pid reused), so that its
// workers claim their runs at once; a live holder's runs, and those of a
// holder on another host, keep their leases.
func TestAdoptDeadHolders(t *testing.T) {
	self := selfIdentity()
	if !self.known() {
		t.Skip("no process identity here (/proc of another PID namespace)")
	}
	ctx := context.Background()
	db := openDB(t)
	g := compile(t, oncall)
	host, _ := os.Hostname()
	reused := self
	reused.Start++
	holders := map[string]string{
		"01AAAAAAAAAAAAAAAAAAAAAAAA": newHolder(host, 4194300, "0123456789ab", self), // gone
		"01BBBBBBBBBBBBBBBBBBBBBBBB": newHolder(host, os.Getpid(), "0123456789ab", reused),
		"01CCCCCCCCCCCCCCCCCCCCCCCC": newHolder(host, os.Getpid(), "0123456789ab", self), // this process: alive
		"01DDDDDDDDDDDDDDDDDDDDDDDD": newHolder(host+"-elsewhere", 4194300, "0123456789ab", self),
	}
	if !HolderDead(holders["01AAAAAAAAAAAAAAAAAAAAAAAA"]) {
		t.Skip("pid 4194300 is alive here")
	}
	st := &state{Messages: []message{{Role: "user", Text: "x"}}}
	for id, owner := range holders {
		r := &store.Run{ID: id, Agent: "oncall", Status: store.Running, Input: "x", SpecHash: g.hash, State: st.encode()}
		if err := db.CreateRun(ctx, r, g.snapshot, store.Lease{Owner: owner, TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	e := New(db, Config{})
	p := e.newPool(PoolOptions{Log: slog.New(slog.NewTextHandler(&log, nil))})
	p.adopt(ctx)
	if n := strings.Count(log.String(), `msg="lease holder is dead: its runs are taken over"`); n != 2 {
		t.Errorf("%d holders taken over from, want 2:\n%s", n, log.String())
	}
	if len(p.wake) != 1 {
		t.Errorf("%d wake-ups, want 1 (one worker)", len(p.wake))
	}
	now := time.Now()
	for id, owner := range holders {
		r, err := db.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if lapsed := r.Expires.Before(now); lapsed != HolderDead(owner) || r.Owner != owner {
			t.Errorf("run %s of %s: lease until %s", id, owner, r.Expires)
		}
	}
	// The workers claim the dead holders' runs, and only those.
	var got []string
	for {
		v, ok, err := e.Work(ctx, "")
		if err != nil || !ok {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		got = append(got, v.RunID)
	}
	slices.Sort(got)
	if strings.Join(got, " ") != "01AAAAAAAAAAAAAAAAAAAAAAAA 01BBBBBBBBBBBBBBBBBBBBBBBB" {
		t.Errorf("worked on %v, want the dead holders' runs", got)
	}
	log.Reset()
	p.adopt(ctx)
	if log.Len() != 0 {
		t.Errorf("adopted again: %s", log.String())
	}
}
