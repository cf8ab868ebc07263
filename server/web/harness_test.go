package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlite"
	"github.com/agentctl/agentctl/server"
	"github.com/agentctl/agentctl/server/web"
	"github.com/agentctl/agentctl/token"
)

// inboxSpec has a tool that needs approval (its runs counted in ran.log)
// and one that suspends for a ticket.
const inboxSpec = `version: 1
models:
  m:
    provider: scripted
    turns:
      - toolCalls: [{tool: restart, args: {service: nginx}}]
      - text: "done: ${{ results[0] }}"
  r:
    provider: scripted
    turns:
      - toolCalls: [{tool: release, args: {version: "2.0"}}]
      - text: "released: ${{ results[0] }}"
  n:
    provider: scripted
    turns:
      - toolCalls: [{tool: jot, args: {note: "${{ input }}"}}]
      - text: noted
  p:
    provider: scripted
    turns:
      - toolCalls: [{tool: purge, args: {}}]
      - text: "purged: ${{ results[0] }}"
  h:
    provider: scripted
    turns:
      - toolCalls: [{tool: hang, args: {name: "${{ input }}"}}]
      - text: "hung: ${{ results[0] }}"
  w:
    provider: scripted
    turns:
      - toolCalls: [{tool: wipe, args: {}}]
      - text: "wiped: ${{ results[0] }}"
tools:
  restart:
    description: restart a service
    requireApproval: true
    input:
      type: object
      properties: {service: {type: string, enum: [nginx, postgres]}}
      required: [service]
    exec: {command: [sh, -c, 'echo "$0" >> ran.log; echo restarted "$0"', "${{ input.service }}"]}
  release:
    description: release a version
    input:
      type: object
      properties: {version: {type: string}}
    suspend:
      when: ${{ resume == nil }}
      payload: {message: "a change ticket is needed for ${{ input.version }}"}
    resumeSchema:
      type: object
      properties:
        ticket: {type: string, pattern: "^CHG-[0-9]+$", description: "the approved change ticket"}
        risk: {type: string, enum: [low, high]}
        urgent: {type: boolean}
        start: {type: string, format: date-time}
      required: [ticket]
    exec: {command: [echo, deployed]}
  jot:
    description: write a note down
    requireApproval: true
    input:
      type: object
      properties: {note: {type: string}}
    exec: {command: [echo, noted]}
  purge:
    description: purge the caches
    requireApproval: true
    approvers: [dave]
    input: {type: object}
    exec: {command: [echo, purged]}
  hang:
    description: the first time for a name, wait on the FIFO named gate
    input:
      type: object
      properties: {name: {type: string, pattern: "^[a-z]+$"}}
    exec: {command: [sh, -c, 'if [ -e "once-$0" ]; then echo again; else touch "once-$0"; cat gate; fi', "${{ input.name }}"]}
  wipe:
    description: wipe the scratch disk; every decision says why
    requireApproval: true
    requireReason: true
    input: {type: object}
    exec: {command: [echo, wiped]}
agents:
  ops:
    model: m
    tools: [restart]
  wipe:
    model: w
    tools: [wipe]
  release:
    model: r
    tools: [release]
  note:
    model: n
    tools: [jot]
  cleanup:
    model: p
    tools: [purge]
  hang:
    model: h
    tools: [hang]
`

// inbox is a server with the inbox, on loopback, and its users' tokens.
type inbox struct {
	t      *testing.T
	url    string
	dir    string
	tokens map[string]string
	h      http.Handler // the server's, for requests from addresses loopback cannot give
	db     store.Store
}

// newInbox starts a server: alice and bob approve, carol only reads,
// dave has no role (the purge tool's spec names him its approver).
func newInbox(t *testing.T) *inbox {
	t.Helper()
	return newInboxWith(t, "")
}

// newInboxWith is newInbox with more lines of server configuration.
func newInboxWith(t *testing.T, config string) *inbox {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("spec.yaml", []byte(inboxSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "agentctl.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg, err := server.ParseConfig(filepath.Join(dir, "config.yaml"), []byte(
		"specs: [spec.yaml]\nreaders: [alice, bob, carol]\nrunners: [alice]\napprovers: [alice, bob]\n"+config))
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(db, engine.Config{})
	specs := server.NewSpecs(cfg.Specs, 4<<20, e.Compile)
	if err := specs.Load(slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Store: db, Engine: e, Config: cfg, Specs: specs, UI: web.New, TokenRecheck: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Stop(); srv.Wait() })
	in := &inbox{t: t, url: hs.URL, dir: dir, tokens: map[string]string{}, h: srv.Handler(), db: db}
	for _, u := range []string{"alice", "bob", "carol", "dave"} {
		secret, hash := token.New()
		if err := db.CreateToken(ctx, &store.Token{User: u, Hash: hash, CreatedBy: "test", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		in.tokens[u] = secret
	}
	return in
}

// api calls the server's /v1 as alice and decodes the JSON answer.
func (in *inbox) api(method, path, body string) map[string]any {
	in.t.Helper()
	req, _ := http.NewRequest(method, in.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+in.tokens["alice"])
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		in.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		in.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return out
}

// start starts a run of agent and returns its id once it is suspended.
func (in *inbox) start(agent string) string {
	in.t.Helper()
	return in.startWith(agent, "go")
}

// startWith starts a run of agent with input and returns its id once it
// is suspended.
func (in *inbox) startWith(agent, input string) string {
	in.t.Helper()
	b, _ := json.Marshal(map[string]string{"agent": agent, "input": input})
	out := in.api("POST", "/v1/runs", string(b))
	if out["status"] != "suspended" {
		in.t.Fatalf("run of %s: %v, want suspended", agent, out)
	}
	return out["runId"].(string)
}

// status is a run's status.
func (in *inbox) status(id string) string {
	in.t.Helper()
	return in.api("GET", "/v1/runs/"+id, "")["status"].(string)
}

// ran is how many times the restart tool ran.
func (in *inbox) ran() int {
	b, _ := os.ReadFile(filepath.Join(in.dir, "ran.log"))
	return bytes.Count(b, []byte("\n"))
}

// browser is a browser context of its own (its own cookies and
// storage) in the Chromium the package's tests share, headless.
func browser(t *testing.T) context.Context {
	t.Helper()
	shared, err := chromiums.get(chromium(t))
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancel := chromedp.NewContext(shared, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	ctx, cancel2 := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel2)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a browser context: %v", err)
	}
	return ctx
}

// chromiums is the one Chromium of this package's tests: started on
// first use, stopped by TestMain.
var chromiums sharedChromium

// sharedChromium starts Chromium once.
type sharedChromium struct {
	once   sync.Once
	ctx    context.Context
	err    error
	cancel []context.CancelFunc
}

func (c *sharedChromium) get(path string) (context.Context, error) {
	c.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
			chromedp.Flag("headless", "new"), chromedp.WindowSize(1100, 1400))
		actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel2 := chromedp.NewContext(actx)
		c.ctx, c.cancel = ctx, []context.CancelFunc{cancel2, cancel}
		c.err = chromedp.Do(ctx) // the browser and its first tab
	})
	return c.ctx, c.err
}

// stop ends Chromium, if it was started.
func (c *sharedChromium) stop() {
	for _, cancel := range c.cancel {
		cancel()
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	chromiums.stop()
	os.Exit(code)
}

// chromium finds Chromium: skipped without it, unless
// AGENTCTL_REQUIRE_BROWSER=1 (CI), which fails instead.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("AGENTCTL_REQUIRE_BROWSER") == "1" {
		t.Fatal("Chromium is not installed (apt-get install chromium), and AGENTCTL_REQUIRE_BROWSER=1")
	}
	t.Skip("Chromium is not installed (apt-get install chromium); AGENTCTL_REQUIRE_BROWSER=1 makes this a failure")
	return ""
}

// signIn signs user in at /login.
func (in *inbox) signIn(ctx context.Context, user string) {
	in.t.Helper()
	run(in.t, ctx,
		chromedp.Navigate(in.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), in.tokens[user]),
		chromedp.Submit(chromedp.CSS(`#token`)),
		chromedp.WaitVisible(chromedp.CSS(`#inbox`)),
	)
}

// run runs browser actions, failing the test at the first that fails.
func run(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// text is the text of the first element matching a CSS selector, once
// it shows.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(sel)))
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(s)
}
