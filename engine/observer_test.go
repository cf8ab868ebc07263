package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/model/modeltest"
	"github.com/agentctl/agentctl/engine/store"
)

// observed records what an Observer is told.
type observed struct {
	mu     sync.Mutex
	tools  []string // tool toolkit outcome
	models []string // model provider outcome in out
}

func (o *observed) ToolCall(tool, toolkit, outcome string, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if d <= 0 {
		outcome += " (no duration)"
	}
	o.tools = append(o.tools, tool+" "+toolkit+" "+outcome)
}

func (o *observed) ModelCall(model, provider, outcome string, d time.Duration, in, out int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if d <= 0 {
		outcome += " (no duration)"
	}
	o.models = append(o.models, fmt.Sprintf("%s %s %s %d %d", model, provider, outcome, in, out))
}

func TestObserver(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	o := &observed{}
	e := New(db, Config{Observer: o})
	v, err := e.Start(ctx, compile(t, oncall), StartOptions{Agent: "oncall", Input: "nginx and db are down"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Decide(ctx, Decision{RunID: v.RunID, All: true, Action: store.Approve, OSUser: "alice"}); err != nil {
		t.Fatal(err)
	}
	// The scripted model has no provider's name for its model: the
	// spec's name stands for it. Declined or pending calls never ran.
	if want := []string{"check output succeeded", "restart output succeeded", "restart output succeeded"}; !slices.Equal(o.tools, want) {
		t.Errorf("tool calls: got %q, want %q", o.tools, want)
	}
	if want := []string{"script scripted ok 0 0", "script scripted ok 0 0"}; !slices.Equal(o.models, want) {
		t.Errorf("model calls: got %q, want %q", o.models, want)
	}
}

func TestObserverTokensAndErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail []int
		want []string
	}{
		{"ok", nil, []string{"fake-model openai ok 11 7"}},
		{"error", []int{401}, []string{"fake-model openai error 0 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := modeltest.OpenAI(modeltest.Options{Fail: tc.fail})
			defer srv.Close()
			g := compile(t, `
version: 1
models:
  m: {provider: openai, model: fake-model, baseURL: "`+srv.URL+`", apiKey: "k", retries: 0}
tools:
  restart:
    input: {type: object, properties: {service: {type: string}}, required: [service]}
    output: "restarted ${{ input.service }}"
    requireApproval: true
agents:
  oncall: {model: m, tools: [restart], instructions: You are on call.}
`)
			o := &observed{}
			if _, err := New(openDB(t), Config{Observer: o}).Start(context.Background(), g, StartOptions{Agent: "oncall", Input: "nginx is down"}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(o.models, tc.want) {
				t.Errorf("model calls: got %q, want %q", o.models, tc.want)
			}
		})
	}
}
