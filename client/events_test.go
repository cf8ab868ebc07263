package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

// feed is a server's event feed: events with ids 1..n, a run status, and
// the Last-Event-ID of each connection.
type feed struct {
	mu      sync.Mutex
	events  []string // types
	status  store.Status
	lastIDs []string
	queries []string
	// dropAfter cuts the first connection after this many events.
	dropAfter int
	// connect, when set, is called with the lock held as connection n
	// (from 1) comes in.
	connect func(n int)
}

func (f *feed) handler(t *testing.T) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/runs/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.lastIDs = append(f.lastIDs, r.Header.Get("Last-Event-ID"))
		f.queries = append(f.queries, r.URL.RawQuery)
		first := len(f.lastIDs) == 1
		if f.connect != nil {
			f.connect(len(f.lastIDs))
		}
		evs := append([]string(nil), f.events...)
		f.mu.Unlock()
		after, _ := strconv.Atoi(r.Header.Get("Last-Event-ID"))
		w.Header().Set("Content-Type", "text/event-stream")
		for i := after; i < len(evs); i++ {
			if first && f.dropAfter > 0 && i == f.dropAfter {
				// Half an event, then the connection breaks.
				fmt.Fprintf(w, "id: %d\nevent: %s\n", i+1, evs[i])
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			}
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: {\"type\":%q,\"n\":%d}\n\n", i+1, evs[i], evs[i], i+1)
		}
		if r.URL.Query().Get("follow") == "false" {
			fmt.Fprint(w, ": keep-alive\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done() // a server that keeps the stream open
		}
	})
	mux.HandleFunc("GET /v1/runs/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		json.NewEncoder(w).Encode(engine.RunView{RunID: r.PathValue("id"), Status: f.status})
	})
	return mux
}

// A dropped stream resumes after the last event it delivered, with
// Last-Event-ID: nothing lost, nothing repeated.
func TestEventsResumeAfterADrop(t *testing.T) {
	f := &feed{events: []string{"tool-call", "tool-call-approval", "decision", "tool-result", "finish"}, dropAfter: 2, status: store.Completed}
	srv := httptest.NewServer(f.handler(t))
	defer srv.Close()
	c, _ := New(srv.URL, "")
	var got []string
	err := c.Events(context.Background(), Stream{RunID: runID, Follow: true}, func(ev Event) (bool, error) {
		var d struct{ N int }
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatalf("data %s: %v", ev.Data, err)
		}
		got = append(got, fmt.Sprintf("%s:%s:%d", ev.ID, ev.Type, d.N))
		return ev.Type == "finish", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "1:tool-call:1 2:tool-call-approval:2 3:decision:3 4:tool-result:4 5:finish:5"
	if strings.Join(got, " ") != want {
		t.Fatalf("events %q\nwant %q", got, want)
	}
	if len(f.lastIDs) != 2 || f.lastIDs[0] != "" || f.lastIDs[1] != "2" {
		t.Fatalf("Last-Event-ID of each connection: %q", f.lastIDs)
	}
}

// Not following, the events stored so far are read: the stream's end, or
// the server falling silent, ends them.
func TestEventsWithoutFollowEnd(t *testing.T) {
	f := &feed{events: []string{"tool-call", "tool-call-approval"}, status: store.Suspended}
	srv := httptest.NewServer(f.handler(t))
	defer srv.Close()
	c, _ := New(srv.URL, "")
	n := 0
	err := c.Events(context.Background(), Stream{RunID: runID}, func(Event) (bool, error) { n++; return false, nil })
	if err != nil || n != 2 {
		t.Fatalf("%d events, %v", n, err)
	}
	if f.queries[0] != "follow=false" {
		t.Fatalf("query %q", f.queries[0])
	}
}

// Rest follows a run with ?until=rest and reads it each time a stream
// ends, until it rests.
func TestRestFollowsUntilTheRunRests(t *testing.T) {
	f := &feed{events: []string{"tool-call-approval", "decision"}, status: store.Running}
	srv := httptest.NewServer(f.handler(t))
	defer srv.Close()
	c, _ := New(srv.URL, "")
	// The stream ends with the old approval (the server's until=rest)
	// while the run still runs: Rest reconnects; then the run suspends.
	f.connect = func(n int) {
		if n == 2 {
			f.events = append(f.events, "tool-call-approval")
			f.status = store.Suspended
		}
	}
	d, err := c.Rest(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if d == nil || d.Status != store.Suspended {
		t.Fatalf("rest: %+v", d)
	}
	if !strings.Contains(f.queries[0], "until=rest") || f.lastIDs[1] != "2" {
		t.Fatalf("queries %q, Last-Event-IDs %q", f.queries, f.lastIDs)
	}
}
