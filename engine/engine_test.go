package engine

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlite"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/toolkits"
)

const oncall = `
version: 1
models:
  script:
    provider: scripted
    turns:
      - toolCalls:
          - {tool: check, args: {service: nginx}}
          - {tool: restart, args: {service: nginx}}
          - {tool: restart, args: {service: db}}
      - text: "${{ join(results, ' | ') }}"
tools:
  check:
    input: {type: object, properties: {service: {type: string}}, required: [service]}
    output: "${{ input.service }} is down"
  restart:
    input: {type: object, properties: {service: {type: string}}, required: [service]}
    output: "restarted ${{ input.service }}"
    requireApproval: true
agents:
  oncall: {model: script, tools: [check, restart], instructions: be careful}
`

func compile(t testing.TB, src string) *Graph { t.Helper(); return compileWith(t, src, nil) }

// compileWith compiles a spec with the given toolkits (nil: the built-in
// ones).
func compileWith(t testing.TB, src string, table toolkits.Table) *Graph {
	t.Helper()
	return compileAll(t, src, nil, table)
}

// compileAll compiles a spec with the given model providers and toolkits
// (nil: the built-in ones).
func compileAll(t testing.TB, src string, models model.Registry, table toolkits.Table) *Graph {
	t.Helper()
	s, err := spec.Load([]spec.Source{{Name: "spec.yaml", Data: []byte(src)}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := Compile(s, models, table)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func openDB(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "a.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestApproveAndDecline(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	e := New(db, Config{})
	v, err := e.Start(ctx, compile(t, oncall), StartOptions{Agent: "oncall", Input: "nginx and db are down"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != store.Suspended || len(v.Pending) != 2 || v.Pending[0].CallID != "call_2" || v.Pending[1].CallID != "call_3" {
		t.Fatalf("after start: %+v", v)
	}
	// Another engine (process) decides, on a fresh compile of the snapshot;
	// its OS user root may decide on behalf of others.
	other := New(db, Config{Delegates: []string{"root"}})
	v, err = other.Decide(ctx, Decision{RunID: v.RunID, CallID: "call_3", Action: store.Decline, OSUser: "bob", Reason: "db is fine"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != store.Suspended || len(v.Pending) != 1 {
		t.Fatalf("after one decision: %+v", v)
	}
	v, err = other.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, By: "alice", OSUser: "root"})
	if err != nil {
		t.Fatal(err)
	}
	want := "nginx is down | restarted nginx | The tool call was declined by a human (bob) and was not executed. " +
		"Reason: db is fine. Do not retry this call unless the user asks you to."
	if v.Status != store.Completed || v.Output != want {
		t.Fatalf("final: %s %q\nwant output %q", v.Status, v.Output, want)
	}
	d, err := e.Detail(ctx, v.RunID)
	if err != nil {
		t.Fatal(err)
	}
	statuses := ""
	for _, c := range d.Calls {
		statuses += string(c.Status) + " "
	}
	if statuses != "succeeded succeeded declined " {
		t.Errorf("call statuses: %s", statuses)
	}
	if len(d.Decisions) != 2 || d.Decisions[0].By != "bob" || d.Decisions[1].By != "alice" || d.Decisions[1].OSUser != "root" {
		t.Errorf("decisions: %+v", d.Decisions)
	}
}

func TestDecideErrors(t *testing.T) {
	ctx := context.Background()
	e := New(openDB(t), Config{})
	v, err := e.Start(ctx, compile(t, oncall), StartOptions{Agent: "oncall", Input: "x"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve})
	var ce *ChooseError
	if !errors.Is(err, ErrUsage) || !errors.As(err, &ce) || len(ce.Waiting) != 2 || ce.Waiting[0].ID != "call_2" || ce.Waiting[1].ID != "call_3" {
		t.Errorf("ambiguous decision: %v", err)
	}
	_, err = e.Decide(ctx, Decision{RunID: v.RunID, CallID: "call_1", Action: store.Approve})
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("deciding a call that needed no decision: %v, want ErrConflict", err)
	}
	if _, err := e.Start(ctx, compile(t, oncall), StartOptions{Agent: "nobody", Input: "x"}); !errors.Is(err, ErrUsage) {
		t.Errorf("unknown agent: %v, want ErrUsage", err)
	}
}

// racyStore lets a test act at the moment the engine is about to
// suspend a run: the window in which another process's decision lands.
type racyStore struct {
	store.Store
	beforeSuspend func()
}

func (s *racyStore) Suspend(ctx context.Context, l store.Lease, r *store.Run, ev ...store.Event) error {
	if f := s.beforeSuspend; f != nil {
		s.beforeSuspend = nil
		f()
	}
	return s.Store.Suspend(ctx, l, r, ev...)
}

// A decision that lands while another process advances the run is not
// lost: the decider records it and leaves the run to its holder, who sees
// it instead of suspending.
func TestDecisionWhileAnotherProcessAdvances(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	g := compile(t, oncall)
	v, err := New(db, Config{}).Start(ctx, g, StartOptions{Agent: "oncall", Input: "x"})
	if err != nil {
		t.Fatal(err)
	}
	rs := &racyStore{Store: db}
	holder, other := New(rs, Config{}), New(db, Config{})
	var during *RunView
	rs.beforeSuspend = func() {
		// holder has approved and executed call_2 and still holds the run.
		during, err = other.Decide(ctx, Decision{RunID: v.RunID, CallID: "call_3", Action: store.Approve, OSUser: "bob"})
		if err != nil {
			t.Error(err)
		}
	}
	final, err := holder.Decide(ctx, Decision{RunID: v.RunID, CallID: "call_2", Action: store.Approve, OSUser: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if during == nil || during.Status != store.Running {
		t.Errorf("the second decider saw %+v, want the run running in the holder's hands", during)
	}
	if final.Status != store.Completed || final.Output != "nginx is down | restarted nginx | restarted db" {
		t.Errorf("final: %s %q", final.Status, final.Output)
	}
}

func TestRequireApproval(t *testing.T) {
	ctx := context.Background()
	e := New(openDB(t), Config{})
	v, err := e.Start(ctx, compile(t, oncall), StartOptions{Agent: "oncall", Input: "x", RequireApproval: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Pending) != 3 {
		t.Fatalf("with RequireApproval every call waits: %d pending", len(v.Pending))
	}
}

// FuzzResumeData: resume data from the command line never makes the
// check panic, and a rejection is a usage error that names the call.
func FuzzResumeData(f *testing.F) {
	for _, s := range []string{`{"ticket":"CHG-1"}`, `{}`, `[]`, `null`, `{"ticket":1}`, `{`, `{"ticket":"x","extra":[1,{"a":null}]}`} {
		f.Add([]byte(s))
	}
	g := compile(f, `
version: 1
models: {m: {provider: scripted, turns: [{text: x}]}}
tools:
  deploy:
    suspend: {when: "${{ resume == nil }}", payload: {m: x}}
    resumeSchema: {type: object, properties: {ticket: {type: string, pattern: "^CHG-[0-9]+$"}}, required: [ticket], additionalProperties: false}
    output: ok
agents: {a: {model: m, tools: [deploy]}}
`)
	a := g.agents["a"]
	call := &store.Call{ID: "call_1", Tool: "deploy"}
	// What validation must refuse, and accept, whatever the fuzzer finds.
	for _, bad := range []string{`{}`, `[]`, `null`, `{"ticket":1}`, `{`, `{"ticket":"x","extra":[1,{"a":null}]}`, `{"ticket":"CHG-1","x":1}`} {
		if _, err := checkResume(a, call, []byte(bad)); err == nil {
			f.Errorf("%s: accepted, want refused", bad)
		}
	}
	if _, err := checkResume(a, call, []byte(`{"ticket":"CHG-1"}`)); err != nil {
		f.Errorf("valid data refused: %v", err)
	}
	ticket := regexp.MustCompile(`^CHG-[0-9]+$`)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := checkResume(a, call, data)
		if err != nil {
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "call_1") {
				t.Fatalf("%q: %v", data, err)
			}
			return
		}
		// Accepted: exactly what the resumeSchema allows.
		var v map[string]any
		if json.Unmarshal(got, &v) != nil || len(v) != 1 {
			t.Fatalf("%q accepted as %s", data, got)
		}
		if s, ok := v["ticket"].(string); !ok || !ticket.MatchString(s) {
			t.Fatalf("%q accepted as %s", data, got)
		}
	})
}

// TestRedactEncodings cuts a secret out of a result in the encodings a
// result carries it in.
func TestRedactEncodings(t *testing.T) {
	env := map[string]string{"TOK": `p&ss<w>rd "5678"\x`}
	for _, in := range []string{
		`p&ss<w>rd "5678"\x`,
		`{"out":"p\u0026ss\u003cw\u003erd \"5678\"\\x"}`,
		`{"out":"p&ss<w>rd \"5678\"\\x"}`,
		`?t=p%26ss%3Cw%3Erd+%225678%22%5Cx`,
		`/p&ss%3Cw%3Erd%20%225678%22%5Cx`,
	} {
		got := redact("before "+in+" after", []string{"TOK"}, env)
		if strings.Contains(got, "5678") {
			t.Errorf("redact(%s) = %s", in, got)
		}
	}
}

// TestRedactBase64Hex cuts a secret out of its base64 (standard and
// URL-safe, padded or not, at any alignment inside a longer encoded text)
// and hex forms; a short value's encodings are left alone.
func TestRedactBase64Hex(t *testing.T) {
	secret := "p&ss<w>rd?~-5678"
	env := map[string]string{"TOK": secret, "PIN": "4711"}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		for _, pre := range []string{"", "a", "ab", "abc", "token="} {
			for _, post := range []string{"", "!", "\n and more"} {
				in := enc.EncodeToString([]byte(pre + secret + post))
				got := redact("out "+in+" end", []string{"TOK"}, env)
				if !strings.Contains(got, "[env.TOK]") {
					t.Errorf("redact(%q, base64 of %q) = %q", in, pre+secret+post, got)
				}
			}
		}
	}
	for _, in := range []string{hex.EncodeToString([]byte(secret)), strings.ToUpper(hex.EncodeToString([]byte("x" + secret)))} {
		if got := redact(in, []string{"TOK"}, env); !strings.Contains(got, "[env.TOK]") {
			t.Errorf("redact(hex %s) = %s", in, got)
		}
	}
	// Whole forms are cut whole.
	if got := redact(base64.StdEncoding.EncodeToString([]byte(secret)), []string{"TOK"}, env); got != "[env.TOK]" {
		t.Errorf("padded base64: %q", got)
	}
	// A 4-character value is cut as it is, but its base64 and hex forms
	// (NDcxMQ, 34373131) could be any text: they stay.
	if got := redact("4711 NDcxMQ== 34373131", []string{"PIN"}, env); got != "[env.PIN] NDcxMQ== 34373131" {
		t.Errorf("short secret: %q", got)
	}
}
