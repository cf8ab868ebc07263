package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentctl/agentctl/engine/model/modeltest"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlite"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// Each provider drives an approval round trip over its wire protocol
// against a loopback server: two parallel tool calls (one on retry cases),
// both approved, then the final answer. The request bodies the server got
// must match testdata/wire exactly; the API key read from the environment
// is sent as the provider wants it and never reaches the database.
func TestProviderWire(t *testing.T) {
	const secret = "sk-test-do-not-store-7f3a9"
	t.Setenv("AGENTCTL_TEST_KEY", secret)
	cases := []struct {
		name     string
		provider string
		stream   bool
		parallel bool
		fail     []int
	}{
		{name: "openai", provider: "openai", parallel: true},
		{name: "openai_stream", provider: "openai", stream: true, parallel: true},
		{name: "openai_429", provider: "openai", fail: []int{429}},
		{name: "openai_500_twice", provider: "openai", fail: []int{500, 500}},
		{name: "anthropic", provider: "anthropic", parallel: true},
		{name: "anthropic_stream", provider: "anthropic", stream: true, parallel: true},
		{name: "anthropic_529", provider: "anthropic", fail: []int{529}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := modeltest.OpenAI
			if tc.provider == "anthropic" {
				start = modeltest.Anthropic
			}
			srv := start(modeltest.Options{Parallel: tc.parallel, Fail: tc.fail})
			defer srv.Close()
			g := compile(t, `
version: 1
models:
  m: {provider: `+tc.provider+`, model: fake-model, baseURL: "`+srv.URL+`", apiKey: "${{ env.AGENTCTL_TEST_KEY }}", maxTokens: 300}
tools:
  restart:
    description: Restart a service.
    input: {type: object, properties: {service: {type: string}}, required: [service]}
    output: "restarted ${{ input.service }}"
    requireApproval: true
agents:
  oncall: {model: m, tools: [restart], instructions: You are on call.}
`)
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "a.db")
			db, err := sqlite.Open(ctx, path, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var deltas []string
			cfg := Config{}
			if tc.stream {
				cfg.OnEvent = func(ev store.Event) {
					if ev.Type == EventTextDelta {
						var d struct{ Text string }
						json.Unmarshal(ev.Data, &d)
						mu.Lock()
						deltas = append(deltas, d.Text)
						mu.Unlock()
					}
				}
			}
			v, err := New(db, cfg).Start(ctx, g, StartOptions{Agent: "oncall", Input: "nginx is down"})
			if err != nil {
				t.Fatal(err)
			}
			want := 1
			if tc.parallel {
				want = 2
			}
			if v.Status != store.Suspended || len(v.Pending) != want {
				t.Fatalf("after start: %s, %d pending, want %d: %+v", v.Status, len(v.Pending), want, v)
			}
			v, err = New(db, cfg).Decide(ctx, Decision{RunID: v.RunID, All: true, Action: store.Approve, OSUser: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			out := "done: restarted nginx"
			if tc.parallel {
				out += "; restarted redis"
			}
			if v.Status != store.Completed || v.Output != out {
				t.Fatalf("final: %s %q %s", v.Status, v.Output, v.Error)
			}
			if v.Usage.ModelCalls != 2 || v.Usage.InputTokens == 0 || v.Usage.OutputTokens == 0 {
				t.Errorf("usage %+v", v.Usage)
			}
			if tc.stream {
				// Text arrived a word at a time, and no tool-call JSON with it.
				got := strings.Join(deltas, "")
				if got != "Restarting both."+out || len(deltas) < 4 {
					t.Errorf("streamed %q", deltas)
				}
			}

			reqs := srv.Requests()
			if len(reqs) != 2+len(tc.fail) {
				t.Fatalf("%d requests, want %d", len(reqs), 2+len(tc.fail))
			}
			for i, r := range reqs {
				switch tc.provider {
				case "anthropic":
					if r.Header.Get("X-Api-Key") != secret || r.Header.Get("Authorization") != "" {
						t.Errorf("request %d: key not sent as x-api-key", i)
					}
				default:
					if r.Header.Get("Authorization") != "Bearer "+secret {
						t.Errorf("request %d: Authorization %q", i, r.Header.Get("Authorization"))
					}
				}
				// A retried request is the same request again.
				if i > 0 && i <= len(tc.fail) && !bytes.Equal(r.Body, reqs[0].Body) {
					t.Errorf("retry %d sent another body:\n%s\n%s", i, r.Body, reqs[0].Body)
				}
			}
			bodies := []json.RawMessage{reqs[len(tc.fail)].Body, reqs[len(reqs)-1].Body}
			golden(t, filepath.Join("testdata", "wire", tc.name+".json"), bodies)

			db.Close()
			for _, f := range []string{path, path + "-wal"} {
				b, err := os.ReadFile(f)
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				if bytes.Contains(b, []byte(secret)) {
					t.Errorf("%s holds the API key", f)
				}
			}
		})
	}
}

// golden compares the JSON values got with the file at path, written
// indented; -update rewrites the file.
func golden(t *testing.T, path string, got []json.RawMessage) {
	t.Helper()
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(want, b) {
		t.Errorf("request bodies differ from %s (go test -update rewrites it); got:\n%s", path, b)
	}
}
