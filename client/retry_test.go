package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine/store"
)

// TestDecideRepeatsWithItsKey: a decision whose answer is lost (the
// connection cut after the server read it), or that the server cannot
// carry out for now (503), is sent again with the same Idempotency-Key,
// and the answer to the repeat is the answer; a start gets a key of its
// own; continue sends none.
func TestDecideRepeatsWithItsKey(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get(api.IdempotencyKey))
		n++
		i := n
		mu.Unlock()
		switch i {
		case 1: // read, then the connection breaks
			hj, _ := w.(http.Hijacker)
			c, _, _ := hj.Hijack()
			c.Close()
		case 2:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"code":"outcome_unknown","message":"lost"}}`))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set(api.Replayed, "true")
			w.Write([]byte(`{"runId":"01A","status":"completed"}`))
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.Decide(context.Background(), store.Approve, "01A", api.DecisionRequest{}, 0)
	if err != nil || a.Run.RunID != "01A" {
		t.Fatalf("Decide = %+v, %v", a, err)
	}
	if len(keys) != 3 || keys[0] == "" || keys[1] != keys[0] || keys[2] != keys[0] {
		t.Fatalf("keys sent: %q; want one key, three times", keys)
	}
	if _, err := c.Start(context.Background(), api.StartRequest{Agent: "a", Input: "x"}, 0); err != nil {
		t.Fatal(err)
	}
	if keys[3] == "" || keys[3] == keys[0] {
		t.Errorf("a start's key %q: want a fresh one", keys[3])
	}
	if _, err := c.Continue(context.Background(), "01A", 0); err != nil {
		t.Fatal(err)
	}
	if keys[4] != "" {
		t.Errorf("continue sent key %q, want none", keys[4])
	}
}

// TestUnknownOutcome: a decision whose every attempt may have reached the
// server and none told is an *UnknownOutcomeError (exit 8), not
// "unreachable" (exit 6, nothing changed).
func TestUnknownOutcome(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":{"code":"outcome_unknown","message":"lost"}}`))
	}))
	defer srv.Close()
	c, err := New(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	c.keyRetry = time.Second
	_, err = c.Decide(context.Background(), store.Approve, "01A", api.DecisionRequest{}, 0)
	var ue *UnknownOutcomeError
	if !errors.As(err, &ue) || ue.ExitCode() != 8 || ue.Object().Code != api.CodeOutcomeUnknown {
		t.Fatalf("err = %v; want an UnknownOutcomeError", err)
	}
}
