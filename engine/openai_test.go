package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlite"
)

// fakeOpenAI answers chat completions: first with a tool call, then, once
// it has the tool's result, with text quoting it.
type fakeOpenAI struct {
	mu       sync.Mutex
	requests []map[string]any
	auth     []string
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	msgs := req["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	var message map[string]any
	if last["role"] == "tool" {
		message = map[string]any{"role": "assistant", "content": "done: " + fmt.Sprint(last["content"])}
	} else {
		message = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_abc", "type": "function",
			"function": map[string]any{"name": "restart", "arguments": `{"service":"nginx"}`},
		}}}
	}
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
		"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
	})
}

// The openai provider drives the same approval flow over the wire, and
// the API key read from the environment never reaches the database.
func TestOpenAIProvider(t *testing.T) {
	const secret = "sk-test-do-not-store-7f3a9"
	t.Setenv("AGENTCTL_TEST_KEY", secret)
	fake := &fakeOpenAI{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	g := compile(t, `
version: 1
models:
  gpt: {provider: openai, model: gpt-test, baseURL: "`+srv.URL+`", apiKey: "${{ env.AGENTCTL_TEST_KEY }}"}
tools:
  restart:
    description: Restart a service.
    input: {type: object, properties: {service: {type: string}}, required: [service]}
    output: "restarted ${{ input.service }}"
    requireApproval: true
agents:
  oncall: {model: gpt, tools: [restart], instructions: You are on call.}
`)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := New(db, Config{}).Start(ctx, g, StartOptions{Agent: "oncall", Input: "nginx is down"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != store.Suspended || len(v.Pending) != 1 || v.Pending[0].CallID != "call_abc" {
		t.Fatalf("after start: %+v", v)
	}
	v, err = New(db, Config{}).Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != store.Completed || v.Output != "done: restarted nginx" {
		t.Fatalf("final: %s %q", v.Status, v.Output)
	}
	if len(fake.requests) != 2 || fake.auth[0] != "Bearer "+secret {
		t.Fatalf("%d requests, auth %q", len(fake.requests), fake.auth)
	}
	// The second request replays the conversation: system, user, the
	// assistant's tool call, then one tool message with the result.
	msgs := fake.requests[1]["messages"].([]any)
	roles := ""
	for _, m := range msgs {
		roles += m.(map[string]any)["role"].(string) + " "
	}
	if roles != "system user assistant tool " {
		t.Errorf("roles %q", roles)
	}
	if tool := msgs[3].(map[string]any); tool["tool_call_id"] != "call_abc" {
		t.Errorf("tool message %v", tool)
	}
	tools := fake.requests[0]["tools"].([]any)
	if len(tools) != 1 {
		t.Fatalf("tools offered: %v", tools)
	}
	fn := tools[0].(map[string]any)["function"].(map[string]any)
	if b, _ := json.Marshal(fn["parameters"]); fn["name"] != "restart" ||
		string(b) != `{"properties":{"service":{"type":"string"}},"required":["service"],"type":"object"}` {
		t.Errorf("tool offered as %v with parameters %s", fn["name"], b)
	}
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
}
