package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

const runID = "01JD3F0000000000000000000A"

// serveRun answers GET /v1/runs/{id} with a run and records the
// Authorization header it came with.
func serveRun(auth *string, mu *sync.Mutex) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/runs/{id}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		*auth = r.Header.Get("Authorization")
		mu.Unlock()
		json.NewEncoder(w).Encode(engine.RunDetail{RunView: engine.RunView{RunID: runID, Status: store.Completed}})
	})
	return mux
}

func TestTokenSentOverHTTP(t *testing.T) {
	var auth string
	var mu sync.Mutex
	srv := httptest.NewServer(serveRun(&auth, &mu))
	defer srv.Close()
	c, err := New(srv.URL, "secret-token")
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Run(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if d.RunID != runID || auth != "Bearer secret-token" {
		t.Fatalf("run %q, Authorization %q", d.RunID, auth)
	}
}

// The kernel identifies a caller on the Unix socket: the token stays home.
func TestTokenNeverSentToUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	auth := "unset"
	var mu sync.Mutex
	srv := &http.Server{Handler: serveRun(&auth, &mu)}
	go srv.Serve(l)
	defer srv.Close()
	c, err := New("unix:"+sock, "secret-token")
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Run(context.Background(), runID[:12])
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if d.RunID != runID || auth != "" {
		t.Fatalf("run %q, Authorization %q over the socket", d.RunID, auth)
	}
}

func TestNewChecksTheServer(t *testing.T) {
	for _, tc := range []struct {
		server, token, err string
	}{
		{"http://example.com:8080", "tok", "plain http"},
		{"http://10.0.0.1", "tok", "plain http"},
		{"http://example.com:8080", "", ""}, // no token to leak
		{"https://example.com", "tok", ""},
		{"http://127.0.0.1:7070", "tok", ""},
		{"http://localhost:7070", "tok", ""},
		{"http://[::1]:7070", "tok", ""},
		{"unix:/run/agentctl.sock", "tok", ""},
		{"unix:", "", "want unix:/path"},
		{"https://alice:pw@example.com", "", "credentials do not go in the URL"},
		{"https://example.com/v1?token=x", "", "without a path or query"},
		{"ftp://alice:pw@example.com/?token=x", "", `"ftp://example.com/": want https://`},
		{"https://example.com/%zz?token=x", "", "not a URL"},
		{"ftp://example.com", "", "want https://"},
		{"example.com:8080", "", "want https://"},
		{"https://", "", "no host"},
	} {
		_, err := New(tc.server, tc.token)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("New(%q): %v", tc.server, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("New(%q) = %v, want an error with %q", tc.server, err, tc.err)
		case err != nil && (strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "token=")):
			t.Errorf("New(%q): the error shows the password: %v", tc.server, err)
		}
	}
}

func TestErrorsMapToExitCodes(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		code   string
		exit   int
	}{
		{400, `{"error":{"code":"invalid","message":"bad --data","details":[{"pointer":"/data/x","message":"want a string"}]}}`, api.CodeInvalid, 2},
		{401, `{"error":{"code":"unauthenticated","message":"no token"}}`, api.CodeUnauthenticated, 2},
		{403, `{"error":{"code":"forbidden","message":"bob is not an approver"}}`, api.CodeForbidden, 5},
		{404, `{"error":{"code":"not_found","message":"no run 01X"}}`, api.CodeNotFound, 2},
		{409, `{"error":{"code":"conflict","message":"already decided"}}`, api.CodeConflict, 4},
		{413, `{"error":{"code":"too_large","message":"body over 1 MiB"}}`, api.CodeTooLarge, 2},
		{429, `{"error":{"code":"rate_limited","message":"slow down"}}`, api.CodeRateLimited, 1},
		{503, `{"error":{"code":"unavailable","message":"database locked"}}`, api.CodeUnavailable, 6},
		{502, `<html>bad gateway</html>`, api.CodeUnavailable, 6},
		{403, `forbidden by proxy`, api.CodeForbidden, 5},
		{500, `{"error":{"code":"teapot","message":"??"}}`, "teapot", 1},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(tc.status)
			fmt.Fprint(w, tc.body)
		}))
		c, err := New(srv.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Run(context.Background(), runID)
		srv.Close()
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%d %s: %v (%T), want *Error", tc.status, tc.body, err, err)
			continue
		}
		if e.Status != tc.status || e.API.Code != tc.code || e.ExitCode() != tc.exit || e.Error() == "" {
			t.Errorf("%d %s: status %d code %q exit %d message %q; want %d %q %d", tc.status, tc.body, e.Status, e.API.Code, e.ExitCode(), e.Error(), tc.status, tc.code, tc.exit)
		}
	}
}

func TestUnreachableServerExits6(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "http://" + l.Addr().String()
	l.Close() // nobody listens there now
	c, err := New(addr, "tok")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Run(context.Background(), runID)
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.ExitCode() != 6 || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err = %v (%T), want an *UnreachableError naming %s", err, err, addr)
	}
	if strings.Contains(err.Error(), "tok") {
		t.Fatalf("the error shows the token: %v", err)
	}
	sock := filepath.Join(t.TempDir(), "none.sock")
	c, _ = New("unix:"+sock, "")
	if _, err = c.Run(context.Background(), runID); !errors.As(err, &ue) || !strings.Contains(err.Error(), sock) {
		t.Fatalf("err = %v, want an *UnreachableError naming %s", err, sock)
	}
}

// List follows the cursor until it has the runs asked for.
func TestListFollowsPages(t *testing.T) {
	var runs []*engine.RunView
	for i := range 7 {
		runs = append(runs, &engine.RunView{RunID: fmt.Sprintf("RUN%d", i), Status: store.Suspended})
	}
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.RawQuery)
		start := 0
		fmt.Sscan(r.URL.Query().Get("cursor"), &start)
		end := min(start+3, len(runs)) // the server's pages hold 3 at most
		page := api.List[*engine.RunView]{Items: runs[start:end]}
		if end < len(runs) {
			page.Next = fmt.Sprint(end)
		}
		json.NewEncoder(w).Encode(page)
	}))
	defer srv.Close()
	c, _ := New(srv.URL, "")
	got, err := c.List(context.Background(), Filter{Status: store.Suspended, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[4].RunID != "RUN4" {
		t.Fatalf("got %d runs", len(got))
	}
	if !strings.Contains(queries[0], "status=suspended") || !strings.Contains(queries[1], "cursor=3") {
		t.Fatalf("queries %q", queries)
	}
	queries = nil
	if got, err = c.List(context.Background(), Filter{}); err != nil || len(got) != 7 || len(queries) != 3 {
		t.Fatalf("all: %d runs, %v, queries %q", len(got), err, queries)
	}
}

func TestTreeFlattensChildren(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/runs/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("tree") != "true" {
			t.Errorf("query %q", r.URL.RawQuery)
		}
		if r.PathValue("id") == "C1" { // a child: the tree is its root's
			fmt.Fprint(w, `{"runId":"C1","rootId":"R","agent":"db","status":"suspended","children":[{"runId":"G","agent":"sh","status":"completed"}]}`)
			return
		}
		fmt.Fprint(w, `{"runId":"R","rootId":"R","agent":"sup","status":"suspended","children":[
			{"runId":"C1","agent":"db","status":"suspended","parentCall":"call_1","children":[{"runId":"G","agent":"sh","status":"completed"}]},
			{"runId":"C2","agent":"web","status":"completed","parentCall":"call_2"}]}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, _ := New(srv.URL, "")
	for _, id := range []string{"R", "C1"} {
		tr, err := c.Tree(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range tr {
			got = append(got, fmt.Sprintf("%s/%d/%s", n.RunID, n.Depth, n.ParentCall))
		}
		if want := "R/0/ C1/1/call_1 G/2/ C2/1/call_2"; strings.Join(got, " ") != want {
			t.Fatalf("tree of %s: %q, want %q", id, got, want)
		}
	}
}

func TestShortIDAsksTheServer(t *testing.T) {
	other := runID[:12] + "ZZZZZZZZZZZZZZ" // shares 12 characters with runID
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/runs/{id}", func(w http.ResponseWriter, r *http.Request) {
		p := r.PathValue("id")
		var matches []string
		for _, id := range []string{runID, other} {
			if strings.HasPrefix(id, p) {
				matches = append(matches, id)
			}
		}
		if len(matches) > 1 {
			w.WriteHeader(400)
			json.NewEncoder(w).Encode(api.ErrorBody{Error: api.Error{Code: api.CodeInvalid, Message: "ambiguous", Details: []api.Detail{{Matches: matches}}}})
			return
		}
		json.NewEncoder(w).Encode(engine.RunView{RunID: matches[0]})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, _ := New(srv.URL, "")
	s, err := c.ShortID(context.Background(), runID)
	if err != nil || s != runID[:13] {
		t.Fatalf("ShortID = %q, %v; want %q", s, err, runID[:13])
	}
}

// Decide, Start, Send and Continue post the CLI's flags as the API's
// bodies, with ?wait= when asked, and read 202 as not done.
func TestAdvanceRequests(t *testing.T) {
	var got []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, fmt.Sprintf("%s %s?%s %s %s", r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Content-Type"), b))
		mu.Unlock()
		status := http.StatusOK
		if strings.HasSuffix(r.URL.Path, "/continue") {
			status = http.StatusAccepted
		}
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(engine.RunDetail{RunView: engine.RunView{RunID: runID, Status: store.Completed}})
	}))
	defer srv.Close()
	c, _ := New(srv.URL, "")
	ctx := context.Background()
	a, err := c.Decide(ctx, store.Approve, runID, api.DecisionRequest{Call: "call_1", Reason: "ok", Args: json.RawMessage(`{"x":1}`), As: "bob"}, 0)
	if err != nil || !a.Done || a.Run.RunID != runID {
		t.Fatalf("decide: %+v, %v", a, err)
	}
	if _, err := c.Start(ctx, api.StartRequest{Agent: "oncall", Input: "hi", Spec: "version: 1\n"}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, runID, api.SendRequest{Text: "more"}, 0); err != nil {
		t.Fatal(err)
	}
	a, err = c.Continue(ctx, runID, 0)
	if err != nil || a.Done {
		t.Fatalf("continue (202): %+v, %v", a, err)
	}
	want := []string{
		`POST /v1/runs/` + runID + `/approve? application/json {"call":"call_1","reason":"ok","args":{"x":1},"as":"bob"}`,
		`POST /v1/runs?wait=5s application/json {"agent":"oncall","input":"hi","spec":"version: 1\n"}`,
		`POST /v1/runs/` + runID + `/send? application/json {"text":"more"}`,
		`POST /v1/runs/` + runID + `/continue? application/json {}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A server whose certificate is not trusted cannot be reached (exit 6),
// and the token is not sent to it.
func TestUntrustedCertificate(t *testing.T) {
	var auth string
	var mu sync.Mutex
	srv := httptest.NewTLSServer(serveRun(&auth, &mu))
	defer srv.Close()
	c, err := New(srv.URL, "secret-token")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Run(context.Background(), runID)
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.ExitCode() != 6 || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("err = %v (%T), want an *UnreachableError about the certificate", err, err)
	}
	if auth != "" {
		t.Fatalf("the token reached a server with an untrusted certificate: %q", auth)
	}
}

// A redirect is refused: it could carry the token to another host.
func TestNoRedirects(t *testing.T) {
	var auth string
	var mu sync.Mutex
	other := httptest.NewServer(serveRun(&auth, &mu))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	defer srv.Close()
	c, _ := New(srv.URL, "secret-token")
	if _, err := c.Run(context.Background(), runID); err == nil || !strings.Contains(err.Error(), "redirect") {
		t.Fatalf("err = %v, want a refused redirect", err)
	}
	if auth != "" {
		t.Fatalf("the token followed a redirect: %q", auth)
	}
}

// A request refused for the identity's rate (429: nothing was done) is
// sent again after the server's Retry-After, a few times.
func TestRateLimitedRetried(t *testing.T) {
	var mu sync.Mutex
	n, refuse := 0, 2
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n <= refuse {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"code":"rate_limited","message":"too many requests"}}`)
			return
		}
		json.NewEncoder(w).Encode(engine.RunDetail{RunView: engine.RunView{RunID: runID}})
	}))
	defer srv.Close()
	c, _ := New(srv.URL, "")
	if _, err := c.Decide(context.Background(), store.Approve, runID, api.DecisionRequest{}, 0); err != nil || n != 3 {
		t.Fatalf("after 2 refusals: %v, %d requests", err, n)
	}
	n, refuse = 0, 100
	_, err := c.Run(context.Background(), runID)
	var e *Error
	if !errors.As(err, &e) || e.ExitCode() != 1 || n != rateRetries+1 {
		t.Fatalf("always refused: %v, %d requests", err, n)
	}
}

func TestApprovalsAndWhoami(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/approvals", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "cursor=C1&limit=2" {
			t.Errorf("query %q", r.URL.RawQuery)
		}
		fmt.Fprint(w, `{"items":[{"runId":"R","rootId":"R","callId":"call_1","agent":"oncall","path":["oncall"],"tool":"restart","args":{"service": "nginx"},"kind":"approval","approvers":["alice"],"approvalsNeeded":1,"approvalsGiven":0,"createdAt":"2026-12-01T10:00:00Z"}],"next":"C2"}`)
	})
	mux.HandleFunc("GET /v1/whoami", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"user":"alice","groups":["sre"],"via":"token","roles":["reader","approver"]}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, _ := New(srv.URL, "tok")
	page, err := c.Approvals(context.Background(), 2, "C1")
	if err != nil || len(page.Items) != 1 || page.Next != "C2" || string(page.Items[0].Args) != `{"service":"nginx"}` || page.Items[0].Approvers[0] != "alice" {
		t.Fatalf("approvals: %+v, %v", page, err)
	}
	who, err := c.Whoami(context.Background())
	if err != nil || who.User != "alice" || who.Via != "token" || len(who.Roles) != 2 {
		t.Fatalf("whoami: %+v, %v", who, err)
	}
}
