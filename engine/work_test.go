package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/toolkits"
)

// starts is a Store that records where calls moved on to executing: in
// their run's claim, or by a move of their own.
type starts struct {
	store.Store
	claimed, moved []string
}

func (s *starts) ClaimStart(ctx context.Context, l store.Lease, agent string, plain []store.Plain) (*store.Claimed, error) {
	w, err := s.Store.ClaimStart(ctx, l, agent, plain)
	if err == nil && w != nil && w.Started != "" {
		s.claimed = append(s.claimed, w.Started)
	}
	return w, err
}

func (s *starts) MoveCall(ctx context.Context, l store.Lease, m store.Move, ev ...store.Event) error {
	err := s.Store.MoveCall(ctx, l, m, ev...)
	if err == nil && m.To == store.CallExecuting {
		s.moved = append(s.moved, m.CallID)
	}
	return err
}

const workSpec = `
version: 1
models:
  m:
    provider: scripted
    turns:
      - toolCalls: [{tool: restart, args: {service: nginx}}, {tool: maybe, args: {service: db}}]
      - text: "done: ${{ results[0] }} ${{ results[1] }}"
tools:
  restart:
    output: "restarted ${{ input.service }}"
    requireApproval: true
  maybe:
    output: "ran"
    requireApproval: true
    skip: {when: "${{ input.service == 'db' }}", output: skipped}
agents:
  a: {model: m, tools: [restart, maybe]}
`

// A worker's claim starts the call it runs first when that is a plain
// tool's (restart), in the claim's own commit; a tool with a skip
// condition (maybe) is evaluated first, never started by the claim.
func TestWorkStartsInTheClaim(t *testing.T) {
	ctx := context.Background()
	db := &starts{Store: openDB(t)}
	g := compile(t, workSpec)
	e := New(db, Config{})
	v, err := e.Start(ctx, g, StartOptions{Agent: "a", Input: "x"})
	if err != nil || v.Status != store.Suspended || len(v.Pending) != 2 {
		t.Fatalf("start: %+v, %v", v, err)
	}
	for _, c := range v.Pending {
		if _, err := e.Decide(ctx, Decision{RunID: v.RunID, CallID: c.CallID, Action: store.Approve, OSUser: "bob", Detach: true}); err != nil {
			t.Fatal(err)
		}
	}
	// The engine that started the run knows its spec: its claim may start.
	w, ok, err := e.Work(ctx, "")
	if err != nil || !ok || w.Status != store.Completed || w.Output != "done: restarted nginx skipped" {
		t.Fatalf("work: %+v, %v, %v", w, ok, err)
	}
	if len(db.claimed) != 1 || db.claimed[0] != "call_1" || len(db.moved) != 0 {
		t.Errorf("started in the claim %v, by a move %v; want call_1 in the claim, none by a move", db.claimed, db.moved)
	}
	calls, err := db.Calls(ctx, v.RunID)
	if err != nil || calls[0].StartedAt.IsZero() || calls[0].Status != store.CallSucceeded || calls[1].Result != "skipped" {
		t.Errorf("calls: %+v, %v", calls, err)
	}
}

// A worker asked to stop after its claim started a call runs that call:
// its start is committed, the step in flight. The run is then released
// with the result stored, never with the call left executing.
func TestWorkStartedRunsOnStop(t *testing.T) {
	ctx := context.Background()
	tool := &gated{started: make(chan struct{}, 1), release: make(chan struct{})}
	close(tool.release)
	table := toolkits.Table{"output": func(d *spec.Tool) (toolkits.Kit, error) {
		tool.Declared = toolkits.Declared{Spec: d, Summary: "deploy"}
		return tool, nil
	}}
	g := compileWith(t, `
version: 1
models:
  m:
    provider: scripted
    turns:
      - toolCalls: [{tool: deploy}]
      - text: "done: ${{ results[0] }}"
tools:
  deploy: {output: unused, requireApproval: true}
agents:
  a: {model: m, tools: [deploy]}
`, table)
	db := &starts{Store: openDB(t)}
	stop := make(chan struct{})
	e := New(db, Config{Toolkits: table, Stop: stop})
	v, err := e.Start(ctx, g, StartOptions{Agent: "a", Input: "x"})
	if err != nil || v.Status != store.Suspended {
		t.Fatalf("start: %+v, %v", v, err)
	}
	if _, err := e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "bob", Detach: true}); err != nil {
		t.Fatal(err)
	}
	close(stop)
	var ie *InterruptedError
	if _, ok, err := e.Work(ctx, ""); !ok || !errors.As(err, &ie) || len(db.claimed) != 1 {
		t.Fatalf("work: %v, %v, started in the claim %v; want the run interrupted after its call", ok, err, db.claimed)
	}
	calls, err := db.Calls(ctx, v.RunID)
	if err != nil || calls[0].Status != store.CallSucceeded || calls[0].Result != "deployed" || tool.calls.Load() != 1 {
		t.Fatalf("calls %+v, %v, the tool ran %d times; want its result stored", calls, err, tool.calls.Load())
	}
	if r, err := db.Run(ctx, v.RunID); err != nil || r.Owner != "" || r.Status != store.Running {
		t.Fatalf("run after stop: %+v, %v; want running and released", r, err)
	}
	w, err := New(db, Config{Toolkits: table}).Continue(ctx, v.RunID)
	if err != nil || w.Status != store.Completed || w.Output != "done: deployed" || tool.calls.Load() != 1 {
		t.Fatalf("continue: %+v, %v, the tool ran %d times", w, err, tool.calls.Load())
	}
}
