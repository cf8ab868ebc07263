package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/internal/health"
	"github.com/agentctl/agentctl/server/metrics"
)

const testRoles = `
readers: [rita]
runners: [ralph]
authors: [ann]
approvers: [alice, group:sre]
delegates: [bot]
`

// startRun starts a run of ops as ralph and returns its id.
func (e *testEnv) startRun(tok string) string {
	e.t.Helper()
	r := e.do("POST", "/v1/runs", tok, map[string]any{"agent": "ops", "input": "nginx is down"})
	if r.code != http.StatusCreated {
		e.t.Fatalf("start: %d %s", r.code, r.body)
	}
	if s := r.field(e.t, "status"); s != "suspended" {
		e.t.Fatalf("start: status %v", s)
	}
	return r.field(e.t, "runId").(string)
}

// A run started over HTTP suspends and shows in the inbox; a
// non-approver is refused (403) and the refusal is on record; an
// approver by group approves, and the tool runs once.
func TestApproveOverHTTP(t *testing.T) {
	e := newEnv(t, testRoles)
	ralph := e.token("ralph", nil, time.Hour, false)
	id := e.startRun(ralph)

	rita := e.token("rita", nil, time.Hour, false)
	r := e.do("GET", "/v1/approvals", rita, nil)
	var inbox struct {
		Items []struct {
			RunID, CallID, Tool, Kind string
			Approvers                 []string
			ApprovalsNeeded           int
		}
	}
	if err := json.Unmarshal(r.body, &inbox); err != nil || r.code != 200 || len(inbox.Items) != 1 {
		t.Fatalf("inbox: %d %s", r.code, r.body)
	}
	if it := inbox.Items[0]; it.RunID != id || it.Tool != "restart" || it.Kind != "approval" || it.ApprovalsNeeded != 1 {
		t.Fatalf("inbox item: %+v", it)
	}

	// rita reads but may not approve.
	r = e.do("POST", "/v1/runs/"+id[:10]+"/approve", rita, map[string]any{})
	if r.code != http.StatusForbidden || r.errCode(t) != "forbidden" {
		t.Fatalf("rita approves: %d %s", r.code, r.body)
	}
	// sam's token has group sre: the approvers role.
	sam := e.token("sam", []string{"sre"}, time.Hour, false)
	r = e.do("POST", "/v1/runs/"+id+"/approve", sam, map[string]any{"reason": "ok"})
	if r.code != http.StatusOK || r.field(t, "status") != "completed" {
		t.Fatalf("sam approves: %d %s", r.code, r.body)
	}
	if n := e.ranCount(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
	ds := r.field(t, "decisions").([]any)
	var seen []string
	for _, d := range ds {
		m := d.(map[string]any)
		seen = append(seen, m["action"].(string)+" by "+m["by"].(string))
	}
	if got := strings.Join(seen, ", "); got != "refused by rita, approve by sam" {
		t.Fatalf("decisions: %s", got)
	}
}

// The error classes: each with its status and code.
func TestErrorClasses(t *testing.T) {
	e := newEnv(t, testRoles+"limits: {maxBody: 1KiB, maxInput: 512B}\n")
	ralph := e.token("ralph", nil, time.Hour, false)
	id := e.startRun(ralph)
	alice := e.token("alice", nil, time.Hour, false)
	expired := e.token("alice", nil, -time.Minute, false)
	revoked := e.token("alice", nil, time.Hour, true)
	for _, c := range []struct {
		name, method, path, tok string
		body                    any
		code                    int
		errCode, detail         string
	}{
		{"no credentials", "GET", "/v1/runs", "", nil, 401, "unauthenticated", ""},
		{"malformed token", "GET", "/v1/runs", "agt_nope", nil, 401, "unauthenticated", ""},
		{"expired token", "GET", "/v1/runs", expired, nil, 401, "unauthenticated", ""},
		{"revoked token", "GET", "/v1/runs", revoked, nil, 401, "unauthenticated", ""},
		{"token in the URL", "GET", "/v1/runs?access_token=" + alice, "", nil, 401, "unauthenticated", ""},
		{"no role", "GET", "/v1/runs", e.token("nobody", nil, time.Hour, false), nil, 403, "forbidden", ""},
		{"bad id", "GET", "/v1/runs/not-an-id", alice, nil, 400, "invalid", "/id"},
		{"unknown run", "GET", "/v1/runs/00000000000000000000000000", alice, nil, 404, "not_found", ""},
		{"unknown field", "POST", "/v1/runs/" + id + "/approve", alice, `{"resaon": "typo"}`, 400, "invalid", "/resaon"},
		{"wrong type", "POST", "/v1/runs/" + id + "/approve", alice, `{"reason": 5}`, 400, "invalid", "/reason"},
		{"a field of another action", "POST", "/v1/runs/" + id + "/approve", alice, `{"data": {}}`, 400, "invalid", "/data"},
		{"args against the schema", "POST", "/v1/runs/" + id + "/approve", alice, `{"args": {"service": 5}}`, 400, "invalid", "/args/service"},
		{"too large", "POST", "/v1/runs/" + id + "/approve", alice, `{"reason": "` + strings.Repeat("x", 2048) + `"}`, 413, "too_large", ""},
		{"input too large", "POST", "/v1/runs", ralph, `{"agent": "ops", "input": "` + strings.Repeat("x", 600) + `"}`, 413, "too_large", "/input"},
		{"unknown agent", "POST", "/v1/runs", ralph, `{"agent": "nope", "input": "x"}`, 400, "invalid", "/agent"},
		{"no input", "POST", "/v1/runs", ralph, `{"agent": "ops"}`, 400, "invalid", "/input"},
		{"a resume of a call waiting for approval", "POST", "/v1/runs/" + id + "/resume", alice, `{"data": {}}`, 400, "invalid", ""},
	} {
		r := e.do(c.method, c.path, c.tok, c.body)
		if r.code != c.code || r.errCode(t) != c.errCode {
			t.Errorf("%s: %d %s; want %d %s", c.name, r.code, r.body, c.code, c.errCode)
			continue
		}
		if c.detail != "" && !strings.Contains(string(r.body), `"pointer": "`+c.detail+`"`) {
			t.Errorf("%s: no detail at %s: %s", c.name, c.detail, r.body)
		}
		if strings.Contains(string(r.body), "agt_") {
			t.Errorf("%s: a token in the answer: %s", c.name, r.body)
		}
	}
	// Decided once; the second is a conflict.
	if r := e.do("POST", "/v1/runs/"+id+"/approve", alice, nil); r.code != 200 {
		t.Fatalf("approve: %d %s", r.code, r.body)
	}
	if r := e.do("POST", "/v1/runs/"+id+"/approve", alice, nil); r.code != 409 || r.errCode(t) != "conflict" {
		t.Fatalf("approve again: %d %s", r.code, r.body)
	}
}

// Twenty concurrent approvals of one call by one identity: exactly one
// wins (200, the tool runs once), the others get 409.
func TestConcurrentApprovals(t *testing.T) {
	e := newEnv(t, testRoles)
	id := e.startRun(e.token("ralph", nil, time.Hour, false))
	alice := e.token("alice", nil, time.Hour, false)
	var wg sync.WaitGroup
	codes := make(chan int, 20)
	for range 20 {
		wg.Go(func() { codes <- e.do("POST", "/v1/runs/"+id+"/approve", alice, nil).code })
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	if count[200] != 1 || count[409] != 19 {
		t.Fatalf("statuses %v; want one 200 and nineteen 409", count)
	}
	if n := e.ranCount(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
}

// Spec uploads: authors only, refused before the spec is even parsed.
func TestUpload(t *testing.T) {
	e := newEnv(t, testRoles)
	upload := map[string]any{"agent": "ops", "input": "x", "spec": "this is: [not yaml"}
	r := e.do("POST", "/v1/runs", e.token("ralph", nil, time.Hour, false), upload)
	if r.code != 403 || !strings.Contains(string(r.body), "author role") {
		t.Fatalf("a runner uploads: %d %s", r.code, r.body)
	}
	ann := e.token("ann", nil, time.Hour, false)
	r = e.do("POST", "/v1/runs", ann, upload)
	if r.code != 400 || !strings.Contains(string(r.body), `"pointer": "/spec"`) {
		t.Fatalf("an author's broken spec: %d %s", r.code, r.body)
	}
	upload["spec"] = "version: 1\nmodels: {m: {provider: scripted, turns: [{text: hi}]}}\nagents: {ops: {model: m}}\n"
	r = e.do("POST", "/v1/runs", ann, upload)
	if r.code != 403 || !strings.Contains(string(r.body), "named like the configured agent ops") {
		t.Fatalf("an author's spec reusing a configured agent's name: %d %s", r.code, r.body)
	}
	upload["agent"] = "ann-ops"
	upload["spec"] = "version: 1\nmodels: {m: {provider: scripted, turns: [{text: hi}]}}\nagents: {ann-ops: {model: m}}\n"
	r = e.do("POST", "/v1/runs", ann, upload)
	if r.code != 201 || r.field(t, "output") != "hi" {
		t.Fatalf("an author's spec: %d %s", r.code, r.body)
	}
}

// The socket's peer is the OS user of the connecting process (here, the
// test's own); with the proxy header, only a proxy user's word counts.
func TestSocketPeer(t *testing.T) {
	e := newEnv(t, testRoles)
	dir, err := os.MkdirTemp("", "agentctl-sock")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s.sock")
	ln, err := ListenSocket(path, 0o666, "")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o666 {
		t.Fatalf("socket mode: %v %v", fi.Mode(), err)
	}
	srv := &http.Server{Handler: e.srv.Handler(), ConnContext: connContext}
	go srv.Serve(ln)
	defer srv.Close()
	if _, err := ListenSocket(path, 0o666, ""); err == nil || !strings.Contains(err.Error(), "another server") {
		t.Fatalf("a second server on a live socket: %v", err)
	}
	c := socketClient(path)
	r := e.doClient(c, "http://agentctl", "GET", "/v1/whoami", "", nil)
	me, _ := osIdentity(uint32(os.Getuid()))
	if r.code != 200 || r.field(t, "user") != me || r.field(t, "via") != "socket" {
		t.Fatalf("whoami: %d %s", r.code, r.body)
	}
}

// A stale socket file is replaced; a file that is not a socket is not.
func TestStaleSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.sock")
	ln, err := ListenSocket(path, 0o600, "")
	if err != nil {
		t.Fatal(err)
	}
	ln.(interface{ SetUnlinkOnClose(bool) }).SetUnlinkOnClose(false)
	ln.Close() // a server that died: the file stays
	ln, err = ListenSocket(path, 0o600, "")
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	ln.Close()
	// A narrower mode, and a group.
	ln, err = ListenSocket(path, 0o660, "root")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o660 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
	ln.Close()
	other := filepath.Join(dir, "file")
	os.WriteFile(other, nil, 0o644)
	if _, err := ListenSocket(other, 0o600, ""); err == nil {
		t.Fatal("a regular file was replaced by a socket")
	}
}

// The proxy's header is taken only from its addresses; elsewhere it is
// ignored (and stripped). A change it authenticates needs a JSON body
// and, with an Origin, this server's.
func TestProxyHeader(t *testing.T) {
	e := newEnv(t, testRoles+"trustProxyHeader: {header: X-Forwarded-User, from: [10.1.0.0/16]}\n")
	id := e.startRun(e.token("ralph", nil, time.Hour, false))
	h := e.srv.Handler()
	req := func(method, path, from, body string, hdr map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.RemoteAddr = from
		r.Header.Set("X-Forwarded-User", "alice")
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := req("GET", "/v1/whoami", "10.2.0.1:5000", "", nil); w.Code != 401 {
		t.Fatalf("from an untrusted address: %d %s", w.Code, w.Body)
	}
	w := req("GET", "/v1/whoami", "10.1.3.4:5000", "", nil)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"via": "proxy"`) {
		t.Fatalf("from the proxy: %d %s", w.Code, w.Body)
	}
	path := "/v1/runs/" + id + "/approve"
	if w := req("POST", path, "10.1.3.4:5000", "{}", map[string]string{"Content-Type": "text/plain"}); w.Code != 403 {
		t.Fatalf("a form post through the proxy: %d %s", w.Code, w.Body)
	}
	if w := req("POST", path, "10.1.3.4:5000", "{}", map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}); w.Code != 403 {
		t.Fatalf("a cross-site post through the proxy: %d %s", w.Code, w.Body)
	}
	// A header that holds no user name (which would reach the audit
	// trail as it is) is refused: 403, saying why (names_test.go).
	for _, name := range []string{"al ice", "a:b", "a\u202eb", "\xff", strings.Repeat("a", 200)} {
		if w := req("GET", "/v1/whoami", "10.1.3.4:5000", "", map[string]string{"X-Forwarded-User": name}); w.Code != 403 {
			t.Errorf("the proxy's user %q: %d %s", name, w.Code, w.Body)
		}
	}
	if w := req("GET", "/v1/whoami", "10.1.3.4:5000", "", map[string]string{"X-Forwarded-User": "agt_x"}); w.Code != 401 {
		t.Errorf("a token in the proxy's header: %d %s", w.Code, w.Body)
	}
	w = req("POST", path, "10.1.3.4:5000", "{}", map[string]string{"Content-Type": "application/json", "Origin": "http://example.com"})
	if w.Code != 200 {
		t.Fatalf("a same-origin post through the proxy: %d %s", w.Code, w.Body)
	}
}

// Requests over an identity's rate get 429.
func TestRateLimit(t *testing.T) {
	e := newEnv(t, testRoles+"rateLimit: {perSecond: 0.001, burst: 3}\n")
	rita := e.token("rita", nil, time.Hour, false)
	for i := range 3 {
		if r := e.do("GET", "/v1/runs", rita, nil); r.code != 200 {
			t.Fatalf("request %d: %d", i, r.code)
		}
	}
	r := e.do("GET", "/v1/runs", rita, nil)
	if r.code != 429 || r.errCode(t) != "rate_limited" {
		t.Fatalf("over the rate: %d %s", r.code, r.body)
	}
	// Another identity has its own bucket.
	alice := e.token("alice", nil, time.Hour, false)
	if r := e.do("GET", "/v1/runs", alice, nil); r.code != 200 {
		t.Fatalf("another identity: %d", r.code)
	}
	// Failed authentications from an address: limited before any lookup.
	for i := range 3 {
		if r := e.do("GET", "/v1/runs", "agt_guess", nil); r.code != 401 {
			t.Fatalf("guess %d: %d", i, r.code)
		}
	}
	if r := e.do("GET", "/v1/runs", "agt_guess", nil); r.code != 429 {
		t.Fatalf("a guess over the rate: %d", r.code)
	}
	// A valid token from the same address is not locked out.
	if r := e.do("GET", "/v1/whoami", e.token("bob", nil, time.Hour, false), nil); r.code != 200 {
		t.Fatalf("a valid token after the guesses: %d %s", r.code, r.body)
	}
}

// With ?wait=0 a decision answers 202 once it is committed, and the
// server goes on advancing the run; shutdown waits for it.
func TestWaitAndAccepted(t *testing.T) {
	e := newEnv(t, testRoles)
	id := e.startRun(e.token("ralph", nil, time.Hour, false))
	r := e.do("POST", "/v1/runs/"+id+"/approve?wait=0s", e.token("alice", nil, time.Hour, false), nil)
	if r.code != 202 && r.code != 200 {
		t.Fatalf("approve: %d %s", r.code, r.body)
	}
	// Committed before the answer: the decision is on record.
	ds, err := e.db.Decisions(context.Background(), id)
	if err != nil || len(ds) != 1 || ds[0].Action != store.Approve {
		t.Fatalf("decisions after the answer: %v %v", ds, err)
	}
	e.srv.Wait()
	v, err := engine.New(e.db, engine.Config{}).Inspect(context.Background(), id)
	if err != nil || v.Status != store.Completed {
		t.Fatalf("after: %v %v", v, err)
	}
}

// Lists page with a cursor; ?tree=true adds children.
func TestListAndTree(t *testing.T) {
	e := newEnv(t, testRoles)
	ralph := e.token("ralph", nil, time.Hour, false)
	a, b := e.startRun(ralph), e.startRun(ralph)
	rita := e.token("rita", nil, time.Hour, false)
	r := e.do("GET", "/v1/runs?status=suspended&limit=1", rita, nil)
	if r.code != 200 || r.field(t, "next") != b {
		t.Fatalf("page 1: %d %s", r.code, r.body)
	}
	r = e.do("GET", "/v1/runs?status=suspended&limit=1&cursor="+b, rita, nil)
	items, _ := r.field(t, "items").([]any)
	if r.code != 200 || len(items) != 1 || items[0].(map[string]any)["runId"] != a {
		t.Fatalf("page 2: %d %s", r.code, r.body)
	}
	r = e.do("GET", "/v1/runs/"+a+"?tree=true", rita, nil)
	if kids, ok := r.field(t, "children").([]any); r.code != 200 || !ok || len(kids) != 0 {
		t.Fatalf("tree: %d %s", r.code, r.body)
	}
	// A prefix of both: 400 with the matches.
	r = e.do("GET", "/v1/runs/"+a[:2], rita, nil)
	if r.code != 400 || !strings.Contains(string(r.body), a) || !strings.Contains(string(r.body), b) {
		t.Fatalf("an ambiguous prefix: %d %s", r.code, r.body)
	}
	if r := e.do("GET", "/v1/runs?status=bogus", rita, nil); r.code != 400 {
		t.Fatalf("bad status: %d", r.code)
	}
}

// Health and readiness need no credentials; readiness fails once the
// server stops.
func TestHealth(t *testing.T) {
	e := newEnv(t, testRoles)
	if r := e.do("GET", "/healthz", "", nil); r.code != 200 {
		t.Fatalf("healthz: %d", r.code)
	}
	if r := e.do("GET", "/readyz", "", nil); r.code != 200 {
		t.Fatalf("readyz: %d %s", r.code, r.body)
	}
	if r := e.do("GET", "/metrics", "", nil); r.code != 404 {
		t.Fatalf("metrics without the hook: %d", r.code)
	}
	r := e.do("GET", "/healthz", "", nil)
	if r.header.Get("X-Request-Id") == "" {
		t.Fatal("no request id")
	}
	e.srv.Stop()
	if r := e.do("GET", "/readyz", "", nil); r.code != 503 {
		t.Fatalf("readyz while stopping: %d", r.code)
	}
}

// A store that cannot be used: 503, and not ready.
func TestUnavailable(t *testing.T) {
	e := newEnv(t, testRoles)
	rita := e.token("rita", nil, time.Hour, false)
	e.db.mu.Lock()
	e.db.down = true
	e.db.mu.Unlock()
	if r := e.do("GET", "/v1/runs", rita, nil); r.code != 503 || r.errCode(t) != "unavailable" {
		t.Fatalf("list: %d %s", r.code, r.body)
	}
	if r := e.do("GET", "/readyz", "", nil); r.code != 503 {
		t.Fatalf("readyz: %d %s", r.code, r.body)
	}
	if r := e.do("GET", "/healthz", "", nil); r.code != 200 {
		t.Fatalf("healthz: %d", r.code)
	}
}

// A loop that waits on the database and fails (its LISTEN connection
// broke): the server is not ready and names the loop (not why: the
// cause names the database, and /readyz answers anyone), and
// /metrics says the loop is down; once a wait works again, it is ready.
func TestLoopDown(t *testing.T) {
	loops := &health.Loops{}
	m := metrics.New(metrics.Options{Loops: loops})
	e := newEnv(t, testRoles, func(o *Options) { o.Loops, o.Metrics = loops, m.Handler() })
	var fail error
	work := loops.Watch("work", func(context.Context, time.Duration) error { return fail })
	loops.Watch("events", func(context.Context, time.Duration) error { return nil })
	if r := e.do("GET", "/readyz", "", nil); r.code != 200 {
		t.Fatalf("readyz: %d %s", r.code, r.body)
	}
	fail = errors.New("listening for notifications: no connection to the database: conn closed")
	work(context.Background(), time.Millisecond)
	if r := e.do("GET", "/readyz", "", nil); r.code != 503 ||
		!strings.Contains(string(r.body), `"status": "degraded: work"`) || strings.Contains(string(r.body), "conn closed") {
		t.Fatalf("readyz with a loop down: %d %s", r.code, r.body)
	}
	r := e.do("GET", "/metrics", "", nil)
	for _, want := range []string{"agentctl_loop_up{loop=\"events\"} 1\n", "agentctl_loop_up{loop=\"work\"} 0\n"} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	fail = nil
	work(context.Background(), time.Millisecond)
	if r := e.do("GET", "/readyz", "", nil); r.code != 200 {
		t.Fatalf("readyz once the loop works again: %d %s", r.code, r.body)
	}
}

// A delegate decides on behalf of an approver ("as"); anyone else may
// not; both names are on record.
func TestDelegateAs(t *testing.T) {
	e := newEnv(t, testRoles)
	ralph := e.token("ralph", nil, time.Hour, false)
	id := e.startRun(ralph)
	r := e.do("POST", "/v1/runs/"+id+"/approve", ralph, map[string]any{"as": "alice"})
	if r.code != 403 || !strings.Contains(string(r.body), "ralph may not decide on behalf of alice") {
		t.Fatalf("a non-delegate as alice: %d %s", r.code, r.body)
	}
	bot := e.token("bot", nil, time.Hour, false)
	if r := e.do("POST", "/v1/runs/"+id+"/approve", bot, map[string]any{"as": "mallory"}); r.code != 403 {
		t.Fatalf("the bot as a non-approver: %d %s", r.code, r.body)
	}
	r = e.do("POST", "/v1/runs/"+id+"/approve", bot, map[string]any{"as": "alice", "reason": "alice in #ops"})
	if r.code != 200 || r.field(t, "status") != "completed" {
		t.Fatalf("the bot as alice: %d %s", r.code, r.body)
	}
	if !strings.Contains(string(r.body), `"by": "alice",
      "osUser": "bot"`) {
		t.Fatalf("decisions: %s", r.body)
	}
	// As a token user, the groups of the user's tokens count (dana is in
	// sre by hers); as a name the server has no token of, the OS's (root
	// is in no group sre); as one whose tokens are all revoked, none.
	e.token("dana", []string{"sre"}, time.Hour, false)
	e.token("ed", []string{"sre"}, time.Hour, true)
	for _, c := range []struct {
		as   string
		code int
	}{{"dana", 200}, {"root", 403}, {"ed", 403}} {
		id := e.startRun(ralph)
		if r := e.do("POST", "/v1/runs/"+id+"/approve", bot, map[string]any{"as": c.as}); r.code != c.code {
			t.Errorf("the bot as %s: %d %s; want %d", c.as, r.code, r.body, c.code)
		}
	}
}
