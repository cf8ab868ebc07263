package engine

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/toolkits"
)

// pager is a toolkit of the test's own: the engine knows it only through
// the table it compiles with.
type pager struct {
	toolkits.Declared
	calls *atomic.Int32
}

func (p *pager) Do(_ context.Context, c toolkits.Call) (toolkits.Result, error) {
	p.calls.Add(1)
	names := slices.Sorted(maps.Keys(c.Env))
	return toolkits.Result{Content: "paged " + c.Input["team"].(string) + " with token " + c.Env["PAGER_TOKEN"] +
		" (env: " + strings.Join(names, ",") + ")"}, nil
}

func (p *pager) Tools(context.Context) ([]toolkits.Tool, error) { return []toolkits.Tool{p}, nil }

// TestToolkitTable runs a tool whose toolkit comes from the table the
// graph is compiled with: the one gate (approval, schema) and the one
// execution path (redaction of its secrets) apply to it, and the call
// sees only the environment variables the tool declares it reads.
func TestToolkitTable(t *testing.T) {
	t.Setenv("PAGER_TOKEN", "pg-secret-7788")
	t.Setenv("OTHER_SECRET", "not-for-the-pager")
	var calls atomic.Int32
	table := toolkits.Table{"output": func(d *spec.Tool) (toolkits.Kit, error) {
		return &pager{Declared: toolkits.Declared{Spec: d, Summary: "page", Vars: []string{"PAGER_TOKEN"}}, calls: &calls}, nil
	}}
	g := compileWith(t, `
version: 1
models:
  m:
    provider: scripted
    turns:
      - toolCalls: [{tool: page, args: {team: sre}}, {tool: page, args: {team: "${{ 7 }}"}}]
      - text: "${{ results[0] }} / ${{ results[1] }}"
tools:
  page:
    input: {type: object, properties: {team: {type: string}}, required: [team]}
    output: unused
    requireApproval: true
agents:
  a: {model: m, tools: [page]}
`, table)
	ctx := context.Background()
	db := openDB(t)
	e := New(db, Config{Toolkits: table})
	v, err := e.Start(ctx, g, StartOptions{Agent: "a", Input: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != store.Suspended || len(v.Pending) != 1 || calls.Load() != 0 {
		t.Fatalf("want one call waiting for approval and none run: %+v, %d runs", v, calls.Load())
	}
	v, err = e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 || v.Status != store.Completed {
		t.Fatalf("after approval: %d runs, status %s", calls.Load(), v.Status)
	}
	if !strings.Contains(v.Output, "paged sre with token [env.PAGER_TOKEN] (env: PAGER_TOKEN)") || !strings.Contains(v.Output, "invalid arguments") {
		t.Errorf("output %q: want the result redacted and the bad call refused by the schema", v.Output)
	}
	d, err := e.Detail(ctx, v.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Calls {
		if strings.Contains(string(c.Result), "pg-secret-7788") {
			t.Errorf("call %s stored the secret: %s", c.CallID, c.Result)
		}
	}
}
