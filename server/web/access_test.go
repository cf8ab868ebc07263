package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/spec"
)

// An approver the spec names but the server gives no role (dave) opens
// the link of a notification: he sees the calls that name him, and only
// those, decides them, and reads nothing else.
func TestNamedApprover(t *testing.T) {
	in := newInbox(t)
	id, other := in.start("cleanup"), in.start("ops")
	c, _ := signedIn(t, in, "dave")
	_, page := get(t, c, in.url+"/")
	if !strings.Contains(page, `data-run="`+id) || strings.Contains(page, other) {
		t.Errorf("dave's inbox does not show exactly his call:\n%s", page)
	}
	if !strings.Contains(page, `data-live="0"`) || !strings.Contains(page, "calls that name you") {
		t.Errorf("dave's inbox claims to update by itself, or does not say why it is limited")
	}
	r, page := get(t, c, in.url+"/runs/"+id)
	if r.StatusCode != http.StatusOK || !strings.Contains(page, `id="call-`+id+`-call_1"`) || !strings.Contains(page, "needs the reader role") {
		t.Errorf("the run page of dave's call: %d\n%s", r.StatusCode, page)
	}
	for path, want := range map[string]int{"/runs/" + other: 403, "/events": 403} {
		if r, _ := get(t, c, in.url+path); r.StatusCode != want {
			t.Errorf("GET %s as dave: %d, want %d", path, r.StatusCode, want)
		}
	}
	r, _ = post(t, c, in.url+"/runs/"+id+"/calls/call_1/approve", url.Values{"csrf": {csrfOf(t, page)}, "back": {"/"}})
	if r.StatusCode != http.StatusSeeOther || in.status(id) != "completed" {
		t.Errorf("dave's approval: %d, run %s", r.StatusCode, in.status(id))
	}
	if in.status(other) != "suspended" {
		t.Errorf("the other run is %s", in.status(other))
	}
}

// interrupt starts a run of the hang agent for name in an engine of its
// own and stops that engine while the tool waits on the FIFO: the call is
// interrupted; the server's continue makes it wait for a human.
func (in *inbox) interrupt(name string) string {
	in.t.Helper()
	s, err := spec.LoadFiles(filepath.Join(in.dir, "spec.yaml"))
	if err != nil {
		in.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := engine.New(in.db, engine.Config{Stop: ctx.Done()})
	g, err := e.Compile(s)
	if err != nil {
		in.t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { _, err := e.Start(ctx, g, engine.StartOptions{Agent: "hang", Input: name}); errc <- err }()
	gate, err := os.OpenFile(filepath.Join(in.dir, "gate"), os.O_WRONLY, 0) // returns once the tool reads it
	if err != nil {
		in.t.Fatal(err)
	}
	cancel()
	var ie *engine.InterruptedError
	if err := <-errc; !errors.As(err, &ie) {
		in.t.Fatalf("start: %v, want an interrupted call", err)
	}
	gate.Close()
	// The interrupted call leaves its run suspended: nothing to continue.
	if out := in.api("GET", "/v1/runs/"+ie.RunID, ""); out["status"] != "suspended" {
		in.t.Fatalf("after the interruption: %v", out)
	}
	return ie.RunID
}

// An interrupted call says it may have taken effect; Retry runs it
// again, Resolve records a result done by hand.
func TestInboxRetryResolve(t *testing.T) {
	in := newInbox(t)
	if err := syscall.Mkfifo(filepath.Join(in.dir, "gate"), 0o600); err != nil {
		t.Fatal(err)
	}
	retried, resolved := in.interrupt("a"), in.interrupt("b")
	c, _ := signedIn(t, in, "bob")
	_, page := get(t, c, in.url+"/?kind=interrupted")
	for _, id := range []string{retried, resolved} {
		if it := between(page, id); !strings.Contains(it, "may or may not have taken effect") || !strings.Contains(it, ">Retry<") {
			t.Errorf("the interrupted call of %s shows as:\n%s", id, it)
		}
	}
	csrf := csrfOf(t, page)
	post(t, c, in.url+"/runs/"+retried+"/calls/call_1/retry", url.Values{"csrf": {csrf}, "back": {"/"}})
	post(t, c, in.url+"/runs/"+resolved+"/calls/call_1/resolve", url.Values{"csrf": {csrf}, "back": {"/"}, "output": {"purged by hand"}})
	for id, want := range map[string]string{retried: `"stdout":"again\n"`, resolved: "hung: purged by hand"} {
		if out := in.api("GET", "/v1/runs/"+id, ""); out["status"] != "completed" || !strings.Contains(out["output"].(string), want) {
			t.Errorf("run %s: %v %v, want completed with %q", id, out["status"], out["output"], want)
		}
	}
}

// Behind the trusted proxy: the header names the user, a cookie keys
// its CSRF tokens; a token made for another user, or none, is refused.
func TestProxyInbox(t *testing.T) {
	in := newInboxWith(t, "trustProxyHeader: {header: X-Forwarded-User, from: [10.1.0.0/16]}\n")
	id := in.start("ops")
	do := func(user, method, path string, form url.Values, cookies []*http.Cookie) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(form.Encode()))
		req.RemoteAddr = "10.1.2.3:4567"
		req.Header.Set("X-Forwarded-User", user)
		if method == http.MethodPost {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", "http://"+req.Host)
		}
		for _, ck := range cookies {
			req.AddCookie(ck)
		}
		w := httptest.NewRecorder()
		in.h.ServeHTTP(w, req)
		return w
	}
	w := do("bob", "GET", "/", nil, nil)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `data-run="`+id) {
		t.Fatalf("GET / behind the proxy: %d\n%s", w.Code, w.Body)
	}
	cookies, csrf := w.Result().Cookies(), csrfOf(t, w.Body.String())
	if alice := do("alice", "GET", "/", nil, cookies); csrfOf(t, alice.Body.String()) == csrf {
		t.Error("alice and bob get the same CSRF token from one cookie")
	}
	path := "/runs/" + id + "/calls/call_1/approve"
	for name, form := range map[string]url.Values{"no token": {}, "another's token": {"csrf": {csrfOf(t, do("alice", "GET", "/", nil, cookies).Body.String())}}} {
		if w := do("bob", "POST", path, form, cookies); w.Code != http.StatusForbidden {
			t.Errorf("an approval with %s: %d, want 403", name, w.Code)
		}
	}
	if in.status(id) != "suspended" || in.ran() != 0 {
		t.Fatalf("a refused approval changed the run: %s, ran %d", in.status(id), in.ran())
	}
	if w := do("bob", "POST", path, url.Values{"csrf": {csrf}, "back": {"/"}}, cookies); w.Code != http.StatusSeeOther {
		t.Errorf("bob's approval: %d\n%s", w.Code, w.Body)
	}
	if in.status(id) != "completed" || in.ran() != 1 {
		t.Errorf("after bob's approval: %s, ran %d", in.status(id), in.ran())
	}
}
