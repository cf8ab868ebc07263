package engine

import (
	"context"
	"testing"

	"github.com/agentctl/agentctl/engine/store"
)

// lateStore hides one event, as a PostgreSQL transaction that took its id
// and has not committed yet would.
type lateStore struct {
	store.Store
	hide int64
}

func (s *lateStore) Events(ctx context.Context, runID string, after int64) ([]*store.Event, error) {
	evs, err := s.Store.Events(ctx, runID, after)
	out := evs[:0]
	for _, ev := range evs {
		if ev.ID != s.hide {
			out = append(out, ev)
		}
	}
	return out, err
}

// TestCursorLateCommit: an event committed after one with a higher id was
// read still reaches a follower, once.
func TestCursorLateCommit(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	v, err := New(db, Config{}).Start(ctx, compile(t, oncall), StartOptions{Agent: "oncall", Input: "nginx is down"})
	if err != nil {
		t.Fatal(err)
	}
	all, _, err := New(db, Config{}).Events(ctx, v.RunID, 0)
	if err != nil || len(all) < 3 {
		t.Fatalf("events: %v, %v", all, err)
	}
	late := &lateStore{Store: db, hide: all[1].ID}
	e := New(late, Config{})
	cur := &Cursor{RunID: v.RunID}
	first, _, err := cur.Next(ctx, e)
	if err != nil || len(first) != len(all)-1 {
		t.Fatalf("first look: %d events, %v; want %d", len(first), err, len(all)-1)
	}
	late.hide = 0 // it commits
	second, _, err := cur.Next(ctx, e)
	if err != nil || len(second) != 1 || second[0].ID != all[1].ID {
		t.Fatalf("second look: %v, %v; want event %d", second, err, all[1].ID)
	}
	if third, _, err := cur.Next(ctx, e); err != nil || len(third) != 0 {
		t.Fatalf("third look: %v, %v; want nothing new", third, err)
	}
}
