package health

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWatch(t *testing.T) {
	var l Loops
	fail := errors.New("conn closed")
	var next error
	work := l.Watch("work", func(context.Context, time.Duration) error { return next })
	events := l.Watch("events", func(context.Context, time.Duration) error { return nil })
	ctx := context.Background()
	if p := l.Problems(); len(p) != 0 {
		t.Fatalf("registered loops are up: %v", p)
	}
	next = fail
	if err := work(ctx, time.Second); err != fail {
		t.Fatalf("the wait's error is not passed on: %v", err)
	}
	events(ctx, time.Second)
	if p := l.Problems(); len(p) != 1 || p[0].Loop != "work" || p[0].Err != fail {
		t.Fatalf("a failed wait: problems %v", p)
	}
	if s := l.State(); len(s) != 2 || s["work"] || !s["events"] {
		t.Fatalf("state %v", s)
	}
	// A wait ended by its context says nothing of the loop.
	next = nil
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	work(cctx, time.Second)
	if len(l.Problems()) != 1 {
		t.Fatalf("a canceled wait changed the state: %v", l.Problems())
	}
	work(ctx, time.Second)
	if p := l.Problems(); len(p) != 0 {
		t.Fatalf("a wait that works again: problems %v", p)
	}
}
