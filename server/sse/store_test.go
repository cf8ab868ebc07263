package sse

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlite"
	"github.com/agentctl/agentctl/spec"
)

const oncall = `
version: 1
models:
  script:
    provider: scripted
    turns:
      - toolCalls:
          - {tool: check, args: {service: nginx}}
          - {tool: restart, args: {service: nginx}}
      - text: "${{ join(results, ' | ') }}"
tools:
  check:
    input: {type: object, properties: {service: {type: string}}, required: [service]}
    output: "${{ input.service }} is down"
  restart:
    input: {type: object, properties: {service: {type: string}}, required: [service]}
    output: "restarted ${{ input.service }}"
    requireApproval: true
agents:
  oncall: {model: script, tools: [check, restart], instructions: be careful}
`

// poll is a SQLite wake-up: it waits d (backend.Wakeups).
func poll(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// TestFollowRealRun follows a run of the engine on SQLite through the
// store's feed: to its suspension, then, while a human approves, to its
// end, dropping the connection mid-way and resuming with Last-Event-ID.
// The client gets every event of the run once, as agentctl events prints
// it.
func TestFollowRealRun(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "a.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	feeder, ok := any(db).(Feeder)
	if !ok {
		t.Skip("this store has no event feed (store.ServerStore)")
	}
	s, err := spec.Load([]spec.Source{{Name: "spec.yaml", Data: []byte(oncall)}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := engine.Compile(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(db, engine.Config{})
	v, err := e.Start(ctx, g, engine.StartOptions{Agent: "oncall", Input: "nginx is down"})
	if err != nil || v.Status != store.Suspended {
		t.Fatalf("start: %v %+v", err, v)
	}
	n := NewNotifier()
	nctx, stop := context.WithCancel(ctx)
	defer stop()
	go n.Run(nctx, poll, 5*time.Millisecond)
	h := Handler(feeder, n.Wait, Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(w, r, store.FeedFilter{Root: v.RunID})
	}))
	defer srv.Close()
	url := srv.URL + "?until=rest"

	// To its suspension: the stream ends with what the run did up to
	// it (the free call of the step ran after the approval was asked).
	got := drain(t, connect(t, url, ""))
	if sofar, _, err := e.Events(ctx, v.RunID, 0); err != nil || len(got) != len(sofar) || got[len(got)-1].typ != string(engine.EventToolResult) {
		t.Fatalf("until rest: got %+v, want the %d events up to the suspension (%v)", got, len(sofar), err)
	}
	// A human approves while the client follows (the run is at rest
	// until then: it follows without until); it drops after two events
	// and resumes, following to the run's end.
	c := connect(t, srv.URL, got[len(got)-1].id)
	decided := make(chan error, 1)
	go func() {
		_, err := e.Decide(ctx, engine.Decision{RunID: v.RunID, All: true, Action: store.Approve, OSUser: "alice"})
		decided <- err
	}()
	got = append(got, c.mustNext(t), c.mustNext(t))
	c.resp.Body.Close()
	got = append(got, drain(t, connect(t, url, got[len(got)-1].id))...)
	if err := <-decided; err != nil {
		t.Fatal(err)
	}

	want, _, err := e.Events(ctx, v.RunID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d:\n%+v", len(got), len(want), got)
	}
	seen := map[string]bool{}
	for i, ev := range want {
		if got[i].typ != string(ev.Type) || got[i].data != string(ev.JSON()) || seen[got[i].id] {
			t.Errorf("event %d: got %+v, want %s %s (once)", i, got[i], ev.Type, ev.JSON())
		}
		seen[got[i].id] = true
	}
	if last := got[len(got)-1]; last.typ != string(engine.EventFinish) {
		t.Errorf("the stream ended at %s, want finish", last.typ)
	}
}

// drain reads a stream to its end.
func drain(t *testing.T, c *client) []sseEvent {
	t.Helper()
	var out []sseEvent
	for {
		ev, err := c.next()
		if err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
}
