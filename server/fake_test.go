package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/api/apitest"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlite"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/token"
)

// fakeStore is a SQLite store with the server's methods done in memory
// (tokens) or from the Store's own (the inbox), for these tests.
type fakeStore struct {
	*sqlite.DB
	mu     sync.Mutex
	tokens map[[32]byte]*store.Token
	down   bool // List fails as a database that cannot be used
}

func (f *fakeStore) CreateToken(_ context.Context, t *store.Token) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens[t.Hash] = t
	return nil
}

func (f *fakeStore) TokenByHash(_ context.Context, h [32]byte) (*store.Token, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.tokens[h]; ok {
		c := *t
		return &c, nil
	}
	return nil, store.ErrNotFound
}

// List pages with Filter.Before (the store's own may not yet).
func (f *fakeStore) List(ctx context.Context, lf store.Filter) ([]*store.Run, error) {
	f.mu.Lock()
	down := f.down
	f.mu.Unlock()
	if down {
		return nil, fmt.Errorf("list runs: %w", store.ErrBusy)
	}
	limit, before := lf.Limit, lf.Before
	lf.Limit, lf.Before = 0, ""
	runs, err := f.DB.List(ctx, lf)
	if err != nil {
		return nil, err
	}
	if before != "" {
		i := slices.IndexFunc(runs, func(r *store.Run) bool { return r.ID == before })
		runs = runs[i+1:]
	}
	if limit > 0 && len(runs) > limit {
		runs = runs[:limit]
	}
	return runs, nil
}

func (f *fakeStore) Tokens(context.Context) ([]*store.Token, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*store.Token
	for _, t := range f.tokens {
		c := *t
		out = append(out, &c)
	}
	return out, nil
}

func (f *fakeStore) RevokeToken(context.Context, string, time.Time) (*store.Token, error) {
	return nil, store.ErrNotFound
}

func (f *fakeStore) Feed(context.Context, string, store.FeedFilter) ([]*store.Event, error) {
	return nil, nil
}

func (f *fakeStore) Stats(context.Context) (store.Stats, error) { return store.Stats{}, nil }

func (f *fakeStore) Waiting(ctx context.Context, wf store.WaitingFilter) ([]store.WaitingCall, error) {
	runs, err := f.List(ctx, store.Filter{Status: store.Suspended})
	if err != nil {
		return nil, err
	}
	var out []store.WaitingCall
	for _, r := range slices.Backward(runs) {
		calls, err := f.Calls(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		for _, c := range calls {
			if c.Status == store.CallPending && c.Kind != store.KindDelegation && (wf.Kind == "" || c.Kind == wf.Kind) {
				out = append(out, store.WaitingCall{Call: c, Run: r, Cursor: r.ID + "/" + c.ID})
			}
		}
	}
	return out, nil
}

// testSpec has a gated exec tool that leaves a line in $RAN for each
// time it runs, and an agent whose calls anyone in the approvers role
// may decide.
const testSpec = `
version: 1
models:
  m:
    provider: scripted
    turns:
      - toolCalls: [{tool: restart, args: {service: nginx}}]
      - text: "done: ${{ results[0] }}"
tools:
  restart:
    input: {type: object, properties: {service: {type: string}}}
    exec:
      shell: true
      command: ['echo ran >> "$RAN"; echo restarted']
      env: {RAN: "%RAN%"}
    requireApproval: true
agents:
  ops: {model: m, tools: [restart]}
`

// testEnv is a server on a temporary database.
type testEnv struct {
	t    *testing.T
	srv  *Server
	db   *fakeStore
	http *httptest.Server
	ran  string // the file the tool appends to
	dir  string
}

// newEnv starts a server with a configuration (YAML) and testSpec.
func newEnv(t *testing.T, config string, hooks ...func(*Options)) *testEnv {
	t.Helper()
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran.log")
	specFile := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(specFile, []byte(strings.ReplaceAll(testSpec, "%RAN%", ran)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(filepath.Join(dir, "config.yaml"), []byte("specs: [spec.yaml]\n"+config))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sqlite.Open(context.Background(), filepath.Join(dir, "a.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db := &fakeStore{DB: raw, tokens: map[[32]byte]*store.Token{}}
	e := engine.New(db, engine.Config{Names: cfg.NameProfile()})
	specs := NewSpecs(cfg.Specs, 0, e.Compile)
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if err := specs.Load(log); err != nil {
		t.Fatal(err)
	}
	o := Options{Store: db, Engine: e, Config: cfg, Specs: specs, Log: log}
	for _, h := range hooks {
		h(&o)
	}
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		srv.Stop()
		srv.Wait()
		e.Close()
		raw.Close()
	})
	return &testEnv{t: t, srv: srv, db: db, http: hs, ran: ran, dir: dir}
}

// token makes a token for user with groups; expires and revoked shift
// its dates.
func (e *testEnv) token(user string, groups []string, expires time.Duration, revoked bool) string {
	secret, hash := token.New()
	t := &store.Token{ID: token.ID(hash), User: user, Groups: groups, Hash: hash, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(expires)}
	if revoked {
		t.RevokedAt = time.Now()
	}
	if err := e.db.CreateToken(context.Background(), t); err != nil {
		e.t.Fatal(err)
	}
	return secret
}

// response is a status and a body.
type response struct {
	code   int
	body   []byte
	header http.Header
}

// do sends a request with a bearer token (none if empty) and returns
// the response.
func (e *testEnv) do(method, path, tok string, body any) response {
	e.t.Helper()
	return e.doClient(e.http.Client(), e.http.URL, method, path, tok, body)
}

func (e *testEnv) doClient(c *http.Client, base, method, path, tok string, body any) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	// Every response a test records is held against the OpenAPI document.
	oa, err := openAPI()
	if err != nil {
		e.t.Fatal(err)
	}
	oa.Check(e.t, req, resp, data)
	return response{code: resp.StatusCode, body: data, header: resp.Header}
}

// openAPI is the checker of the API's OpenAPI document, loaded once.
var openAPI = sync.OnceValues(func() (*apitest.Checker, error) { return apitest.Load(api.OpenAPI()) })

// socketClient is an HTTP client that connects to a Unix socket.
func socketClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
}

// field decodes a JSON body and returns one top-level field.
func (r response) field(t *testing.T, name string) any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("not a JSON object: %s", r.body)
	}
	return m[name]
}

// errCode returns the error object's code.
func (r response) errCode(t *testing.T) string {
	t.Helper()
	e, _ := r.field(t, "error").(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// ranCount is how many times the tool ran.
func (e *testEnv) ranCount() int {
	data, err := os.ReadFile(e.ran)
	if err != nil {
		return 0
	}
	return strings.Count(string(data), "ran\n")
}

var _ = spec.Load // the spec package is the server's too
