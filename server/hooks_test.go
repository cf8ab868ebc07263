package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/token"
)

// The hooks of the other packages: metrics, the per-request observer
// (with the route's pattern, not the path), the OpenAPI document and
// event streams (after the reader check, with the run's full id).
func TestHooks(t *testing.T) {
	var mu sync.Mutex
	var observed []string
	var feeds []store.FeedFilter
	e := newEnv(t, testRoles, func(o *Options) {
		o.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("up 1\n")) })
		o.ObserveHTTP = func(route string, code int, _ time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			observed = append(observed, route+" "+http.StatusText(code))
		}
		o.OpenAPI = []byte(`{"openapi": "3.1.0"}`)
		o.Events = func(w http.ResponseWriter, _ *http.Request, f store.FeedFilter) {
			mu.Lock()
			feeds = append(feeds, f)
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte(": ok\n\n"))
		}
	})
	id := e.startRun(e.token("ralph", nil, time.Hour, false))
	rita := e.token("rita", nil, time.Hour, false)
	if r := e.do("GET", "/metrics", "", nil); r.code != 200 || string(r.body) != "up 1\n" {
		t.Fatalf("metrics: %d %s", r.code, r.body)
	}
	if r := e.do("GET", "/v1/openapi.json", "", nil); r.code != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("openapi: %d %s", r.code, r.body)
	}
	if r := e.do("GET", "/v1/runs/"+id[:8]+"/events", rita, nil); r.code != 200 {
		t.Fatalf("run events: %d %s", r.code, r.body)
	}
	if r := e.do("GET", "/v1/events", rita, nil); r.code != 200 {
		t.Fatalf("events: %d %s", r.code, r.body)
	}
	if r := e.do("GET", "/v1/events", e.token("nobody", nil, time.Hour, false), nil); r.code != 403 {
		t.Fatalf("events without a role: %d", r.code)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(feeds) != 2 || feeds[0] != (store.FeedFilter{Root: id}) || feeds[1] != (store.FeedFilter{}) { // a root run: its tree
		t.Fatalf("feeds %+v", feeds)
	}
	got := strings.Join(observed, "\n")
	for _, want := range []string{"GET /metrics OK", "POST /v1/runs Created", "GET /v1/runs/{id}/events OK", "GET /v1/events Forbidden"} {
		if !strings.Contains(got, want) {
			t.Errorf("observed:\n%s\nwant %q", got, want)
		}
	}
	if strings.Contains(got, id) {
		t.Errorf("a raw path observed:\n%s", got)
	}
}

// A reload that breaks keeps the specs loaded before, and logs every
// problem at its file:line:col.
func TestSpecsReload(t *testing.T) {
	e := newEnv(t, testRoles)
	dir := e.dir
	good := e.srv.specs.Graph()
	if good == nil {
		t.Fatal("no specs")
	}
	broken := "version: 1\nagents:\n  ops: {model: nope}\n  x: {model: 5}\n"
	if err := os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := e.srv.specs.Load(slog.New(slog.NewTextHandler(&buf, nil))); err == nil {
		t.Fatal("a broken spec loaded")
	}
	if e.srv.specs.Graph() != good {
		t.Fatal("the old specs were dropped")
	}
	log := buf.String()
	if !strings.Contains(log, filepath.Join(dir, "spec.yaml")+":3:") || !strings.Contains(log, "specs not reloaded") {
		t.Fatalf("log:\n%s", log)
	}
	if n := strings.Count(log, "msg=spec "); n < 2 {
		t.Fatalf("%d errors logged:\n%s", n, log)
	}
	// Runs still start from the old specs.
	e.startRun(e.token("ralph", nil, time.Hour, false))
}

// Send, resume, continue over HTTP: a message to a completed run takes
// a new turn; send needs the runner role.
func TestSendAndContinue(t *testing.T) {
	e := newEnv(t, testRoles)
	ralph := e.token("ralph", nil, time.Hour, false)
	id := e.startRun(ralph)
	alice := e.token("alice", nil, time.Hour, false)
	if r := e.do("POST", "/v1/runs/"+id+"/decline", alice, map[string]any{"reason": "no"}); r.code != 200 {
		t.Fatalf("decline: %d %s", r.code, r.body)
	}
	if r := e.do("POST", "/v1/runs/"+id+"/send", alice, map[string]any{"text": "again"}); r.code != 403 {
		t.Fatalf("send without the runner role: %d %s", r.code, r.body)
	}
	if r := e.do("POST", "/v1/runs/"+id+"/send", ralph, map[string]any{}); r.code != 400 {
		t.Fatalf("send without text: %d %s", r.code, r.body)
	}
	r := e.do("POST", "/v1/runs/"+id+"/continue", ralph, nil)
	if r.code != 409 {
		t.Fatalf("continue a completed run: %d %s", r.code, r.body)
	}
	v, err := engine.New(e.db, engine.Config{}).Inspect(t.Context(), id)
	if err != nil || v.Status != store.Completed {
		t.Fatalf("after decline: %v %v", v, err)
	}
}

// A proxy on this host connects to the socket: its OS user, among
// proxyUsers, may name the caller in the header; anyone else's header on
// the socket is ignored, and they are who the kernel says.
func TestProxyOnSocket(t *testing.T) {
	me, _ := osIdentity(uint32(os.Getuid()))
	for _, c := range []struct {
		proxyUsers, want, via string
	}{{me, "carol", "proxy"}, {"someone-else", me, "socket"}} {
		e := newEnv(t, testRoles+"trustProxyHeader: {header: X-Forwarded-User}\nproxyUsers: ["+c.proxyUsers+"]\n")
		dir, err := os.MkdirTemp("", "agentctl-sock")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "s.sock")
		ln, err := ListenSocket(path, 0o600, "")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: e.srv.Handler(), ConnContext: connContext}
		go srv.Serve(ln)
		defer srv.Close()
		req, _ := http.NewRequest("GET", "http://agentctl/v1/whoami", nil)
		req.Header.Set("X-Forwarded-User", "carol")
		req.Header.Set("X-Request-Id", "my-id.1")
		resp, err := socketClient(path).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var who struct{ User, Via string }
		json.NewDecoder(resp.Body).Decode(&who)
		resp.Body.Close()
		if who.User != c.want || who.Via != c.via {
			t.Errorf("proxyUsers [%s]: %+v; want %s via %s", c.proxyUsers, who, c.want, c.via)
		}
		if id := resp.Header.Get("X-Request-Id"); id != "my-id.1" {
			t.Errorf("request id %q not echoed", id)
		}
	}
}

// An insane request id is replaced, not echoed.
func TestRequestID(t *testing.T) {
	e := newEnv(t, testRoles)
	req, _ := http.NewRequest("GET", e.http.URL+"/healthz", nil)
	req.Header.Set("X-Request-Id", "bad id\twith spaces")
	resp, err := e.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if id := resp.Header.Get("X-Request-Id"); id == "" || strings.ContainsAny(id, " \t") {
		t.Fatalf("request id %q", id)
	}
}

// An event stream lasts no longer than the token it was opened with:
// revoked while it is open, the stream ends at the next look; expired,
// at once.
func TestStreamEndsWithToken(t *testing.T) {
	e := newEnv(t, testRoles, func(o *Options) { o.TokenRecheck = 20 * time.Millisecond })
	for _, tc := range []struct {
		name    string
		expires time.Duration
		revoke  bool
	}{{"revoked", time.Hour, true}, {"expired", 300 * time.Millisecond, false}} {
		secret := e.token("rita", nil, tc.expires, false)
		req, _ := http.NewRequest("GET", e.http.URL+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := e.http.Client().Do(req) // the stream is open: its headers came
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: open the stream: %v %v", tc.name, resp, err)
		}
		if tc.revoke {
			e.db.mu.Lock()
			e.db.tokens[token.Hash(secret)].RevokedAt = time.Now()
			e.db.mu.Unlock()
		}
		ended := make(chan error, 1)
		go func() { _, err := io.Copy(io.Discard, resp.Body); ended <- err }()
		select {
		case <-ended:
			resp.Body.Close()
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the stream is still open after 30s", tc.name)
		}
	}
}
