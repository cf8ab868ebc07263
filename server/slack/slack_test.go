package slack_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlite"
	"github.com/agentctl/agentctl/notify"
	"github.com/agentctl/agentctl/server"
	"github.com/agentctl/agentctl/server/slack"
)

const spec = `version: 1
models:
  m:
    provider: scripted
    turns:
      - toolCalls: [{tool: restart, args: {service: nginx}}]
      - text: done
tools:
  restart:
    requireApproval: true
    input: {type: object, properties: {service: {type: string}}}
    exec: {command: [sh, -c, 'echo ran >> ran.log']}
agents:
  ops: {model: m, tools: [restart]}
`

const secret = "test-signing-secret"

// fakeSlack is Slack's Web API: it records what it is sent, and holds
// chat.update until release is closed.
type fakeSlack struct {
	mu      sync.Mutex
	updates []string
	release chan struct{}
	once    sync.Once
}

// open lets the updates through.
func (f *fakeSlack) open() { f.once.Do(func() { close(f.release) }) }

func (f *fakeSlack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if strings.HasSuffix(r.URL.Path, "chat.update") {
		<-f.release
		f.mu.Lock()
		f.updates = append(f.updates, string(b))
		f.mu.Unlock()
	}
	io.WriteString(w, `{"ok":true}`)
}

// env is a server (or two, on one database) with the Slack handler.
type env struct {
	t     *testing.T
	dir   string
	eng   *engine.Engine
	hs    []*httptest.Server
	slack *fakeSlack
}

func newEnv(t *testing.T, servers int) *env {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("spec.yaml", []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := &fakeSlack{release: make(chan struct{})}
	api := httptest.NewServer(fs)
	t.Cleanup(api.Close)
	e := &env{t: t, dir: dir, slack: fs}
	for range servers {
		db, err := sqlite.Open(context.Background(), filepath.Join(dir, "agentctl.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		cfg, err := server.ParseConfig(filepath.Join(dir, "config.yaml"), []byte("specs: [spec.yaml]\nrunners: [alice]\napprovers: [alice, bob]\n"))
		if err != nil {
			t.Fatal(err)
		}
		eng := engine.New(db, engine.Config{})
		specs := server.NewSpecs(cfg.Specs, 4<<20, eng.Compile)
		if err := specs.Load(slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
		h := slack.New(slack.Options{SigningSecret: secret, Bot: notify.Bot{APIURL: api.URL, Token: "xoxb-test"},
			Users: map[string]string{"U0ALICE": "alice", "U0BOB": "bob"}, Store: db})
		srv, err := server.New(server.Options{Store: db, Engine: eng, Config: cfg, Specs: specs, Slack: h})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(func() { fs.open(); hs.Close(); srv.Stop(); srv.Wait() })
		e.hs = append(e.hs, hs)
		e.eng = eng
	}
	return e
}

// suspend starts a run (through the engine) and returns its id.
func (e *env) suspend() string {
	e.t.Helper()
	specs := server.NewSpecs([]string{filepath.Join(e.dir, "spec.yaml")}, 4<<20, e.eng.Compile)
	if err := specs.Load(slog.New(slog.DiscardHandler)); err != nil {
		e.t.Fatal(err)
	}
	g := specs.Graph()
	v, err := e.eng.Start(context.Background(), g, engine.StartOptions{Agent: "ops", Input: "go"})
	if err != nil || v.Status != store.Suspended {
		e.t.Fatalf("start: %+v, %v", v, err)
	}
	return v.RunID
}

// press posts a signed press of Approve by user to server i.
func (e *env) press(i int, user, run string, unique int) (*http.Response, []byte) {
	e.t.Helper()
	p, _ := json.Marshal(map[string]any{"type": "block_actions", "user": map[string]string{"id": user},
		"container": map[string]string{"channel_id": "C1", "message_ts": "1.000001"},
		"message":   map[string]any{"ts": "1.000001", "blocks": []any{}},
		"actions":   []map[string]string{{"action_id": notify.ApproveActionID, "value": notify.ActionValue(run, "call_1"), "action_ts": fmt.Sprint(unique)}}})
	body := []byte("payload=" + url.QueryEscape(string(p)))
	stamp, sig := notify.SignSlack(secret, time.Now(), body)
	return e.post(i, body, stamp, sig)
}

func (e *env) post(i int, body []byte, stamp, sig string) (*http.Response, []byte) {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.hs[i].URL+"/slack/interactions", bytes.NewReader(body))
	req.Header.Set("X-Slack-Request-Timestamp", stamp)
	req.Header.Set("X-Slack-Signature", sig)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func (e *env) ran() int {
	b, _ := os.ReadFile(filepath.Join(e.dir, "ran.log"))
	return bytes.Count(b, []byte("\n"))
}

// Slack is answered at once, while the message's update waits on Slack:
// the decision is made first, the update finishes after.
func TestAnswersBeforeTheUpdate(t *testing.T) {
	e := newEnv(t, 1)
	id := e.suspend()
	resp, _ := e.press(0, "U0ALICE", id, 1)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("press: %d", resp.StatusCode)
	}
	d, err := e.eng.Detail(context.Background(), id)
	if err != nil || len(d.Decisions) != 1 || d.Decisions[0].By != "alice" || d.Decisions[0].Via != "slack" {
		t.Fatalf("after the answer: %+v, %v; want alice's approval via slack recorded", d.Decisions, err)
	}
	e.slack.mu.Lock()
	n := len(e.slack.updates)
	e.slack.mu.Unlock()
	if n != 0 {
		t.Fatalf("the message was updated before Slack was answered")
	}
}

// Two people pressing Approve at once, on two servers sharing the
// database: one approval is recorded and the tool runs once; the same
// signed request sent to the other server is a replay there too.
func TestPressesAtOnce(t *testing.T) {
	e := newEnv(t, 2)
	id := e.suspend()
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i, user := range []string{"U0ALICE", "U0BOB"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := e.press(i, user, id, i)
			codes[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	if codes[0] != 200 || codes[1] != 200 {
		t.Fatalf("answers %v, want 200 twice", codes)
	}
	e.slack.open()
	d, err := e.eng.Detail(context.Background(), id)
	approvals := 0
	for _, dv := range d.Decisions {
		if dv.Action == store.Approve {
			approvals++
		}
	}
	if err != nil || approvals != 1 {
		t.Fatalf("decisions %+v, %v: want one approval", d.Decisions, err)
	}
}

// A replay sent to another server on the same database is refused there.
func TestReplayOnAnotherServer(t *testing.T) {
	e := newEnv(t, 2)
	id := e.suspend()
	p, _ := json.Marshal(map[string]any{"type": "block_actions", "user": map[string]string{"id": "U0BOB"},
		"actions": []map[string]string{{"action_id": notify.ApproveActionID, "value": notify.ActionValue(id, "call_1")}}})
	body := []byte("payload=" + url.QueryEscape(string(p)))
	stamp, sig := notify.SignSlack(secret, time.Now(), body)
	if resp, _ := e.post(0, body, stamp, sig); resp.StatusCode != http.StatusOK {
		t.Fatalf("first: %d", resp.StatusCode)
	}
	if resp, b := e.post(1, body, stamp, sig); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), "replay") {
		t.Fatalf("the replay on the other server: %d %s, want 401", resp.StatusCode, b)
	}
}

// A database too busy to record the press in Slack's time: the press is
// answered 503 (Slack tells the person; they press again), and nothing
// is decided.
func TestBusyStore(t *testing.T) {
	e := newEnv(t, 1)
	id := e.suspend()
	hold, err := sql.Open("sqlite", filepath.Join(e.dir, "agentctl.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	conn, err := hold.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, body := e.press(0, "U0ALICE", id, 1)
	t.Logf("answered in %v", time.Since(start)) // for the log only: Slack's limit is 3s
	if _, err := conn.ExecContext(context.Background(), "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "press again") {
		t.Fatalf("a press while the store is locked: %d %s, want 503", resp.StatusCode, body)
	}
	if d, err := e.eng.Detail(context.Background(), id); err != nil || len(d.Decisions) != 0 {
		t.Fatalf("decisions %+v, %v: want none", d.Decisions, err)
	}
}
