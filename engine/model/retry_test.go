package model

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   []int // per attempt; the last repeats
		retries  int
		want     int // final status
		attempts int64
	}{
		{"rate limited then ok", []int{429, 503, 200}, 3, 200, 3},
		{"gives up after retries", []int{500}, 2, 500, 3},
		{"client errors are final", []int{400, 200}, 3, 400, 1},
		{"no retries", []int{429, 200}, 0, 429, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := int(n.Add(1)) - 1
				body := make([]byte, 5)
				r.Body.Read(body)
				if string(body) != "hello" {
					t.Errorf("attempt %d got body %q", i+1, body)
				}
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(tc.status[min(i, len(tc.status)-1)])
			}))
			defer srv.Close()
			c := newClient(tc.retries, 5*time.Second)
			resp, err := c.Post(srv.URL, "text/plain", strings.NewReader("hello"))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want || n.Load() != tc.attempts {
				t.Errorf("status %d after %d attempts; want %d after %d", resp.StatusCode, n.Load(), tc.want, tc.attempts)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	if d, ok := retryAfter("3"); !ok || d != 3*time.Second {
		t.Errorf("seconds: %v %v", d, ok)
	}
	if d, ok := retryAfter("100000"); !ok || d != maxRetryAfter {
		t.Errorf("capped: %v %v", d, ok)
	}
	if _, ok := retryAfter("soon"); ok {
		t.Error("garbage accepted")
	}
	for i := range 10 {
		if d := backoff(i); d < 0 || d > maxBackoff {
			t.Errorf("backoff(%d) = %v", i, d)
		}
	}
}

// A request cancelled while it waits to be retried is not retried and
// fails with the cancellation. The transport is called directly:
// http.Client.Do returns on cancellation by itself and would hide a
// blind wait. TestSleepStopsOnCancel checks that the wait ends at once.
func TestRetryStopsOnCancel(t *testing.T) {
	var n atomic.Int64
	hit := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			close(hit)
		}
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	done := make(chan error, 1)
	go func() {
		_, err := (&retrying{base: http.DefaultTransport, retries: 5}).RoundTrip(req)
		done <- err
	}()
	<-hit // the first attempt got its 429: the transport now waits
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n.Load() != 1 {
		t.Errorf("%d attempts, want 1", n.Load())
	}
}

// A wait blind to cancellation makes this test hang and fail by timeout.
func TestSleepStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("sleep = %v, want context.Canceled", err)
	}
}

// A model's endpoint that redirects to another origin (here another
// port of the same host, where Go would keep Authorization) is not
// followed: the key never reaches it. One on the same origin is.
func TestRedirectStaysOnOrigin(t *testing.T) {
	var stolen atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			stolen.Add(1)
		}
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/same" {
			http.Redirect(w, r, "/ok", http.StatusTemporaryRedirect)
			return
		}
		if r.URL.Path == "/ok" {
			return
		}
		http.Redirect(w, r, other.URL+"/v1", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	c := newClient(0, 5*time.Second)
	req, _ := http.NewRequest("GET", srv.URL+"/v1", nil)
	req.Header.Set("Authorization", "Bearer sk-secret")
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		t.Error("a redirect to another origin was followed")
	} else if !strings.Contains(err.Error(), "a redirect to http://"+strings.TrimPrefix(other.URL, "http://")+" refused") {
		t.Errorf("error: %v", err)
	}
	if stolen.Load() != 0 {
		t.Error("the key reached the other origin")
	}
	req, _ = http.NewRequest("GET", srv.URL+"/same", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("a redirect on the same origin: %v", err)
	}
	resp.Body.Close()
}
