package engine

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/toolkits"
)

// gated is a tool that says it started, then waits to be released or
// stopped (its context ends: it returns the context's error, as the
// toolkits do).
type gated struct {
	toolkits.Declared
	started chan struct{}
	release chan struct{}
	calls   atomic.Int32
}

func (g *gated) Do(ctx context.Context, _ toolkits.Call) (toolkits.Result, error) {
	g.calls.Add(1)
	g.started <- struct{}{}
	select {
	case <-g.release:
		return toolkits.Result{Content: "deployed"}, nil
	case <-ctx.Done():
		return toolkits.Result{}, ctx.Err()
	}
}

func (g *gated) Tools(context.Context) ([]toolkits.Tool, error) { return []toolkits.Tool{g}, nil }

// stopSetup compiles a one-tool spec whose tool is gated.
func stopSetup(t *testing.T) (*Graph, toolkits.Table, *gated) {
	t.Helper()
	tool := &gated{started: make(chan struct{}), release: make(chan struct{})}
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
  deploy: {output: unused}
agents:
  a: {model: m, tools: [deploy]}
`, table)
	return g, table, tool
}

// Asked to stop (SIGTERM), the engine lets the tool in flight finish,
// stores its result, and checkpoints and releases the run; the next
// process goes on from there without running the tool again.
func TestStopLetsTheToolFinish(t *testing.T) {
	g, table, tool := stopSetup(t)
	db := openDB(t)
	stop := make(chan struct{})
	e := New(db, Config{Toolkits: table, Stop: stop})
	ctx := context.Background()
	errc := make(chan error, 1)
	go func() { _, err := e.Start(ctx, g, StartOptions{Agent: "a", Input: "x"}); errc <- err }()
	<-tool.started
	if !e.Busy() {
		t.Error("Busy is false while a tool runs")
	}
	close(stop)
	close(tool.release)
	var ie *InterruptedError
	if err := <-errc; !errors.As(err, &ie) {
		t.Fatalf("Start: %v, want an InterruptedError", err)
	}
	r, err := db.Run(ctx, ie.RunID)
	if err != nil || r.Owner != "" || r.Status != store.Running {
		t.Fatalf("run after stop: %+v, %v; want running and released", r, err)
	}
	calls, err := db.Calls(ctx, ie.RunID)
	if err != nil || len(calls) != 1 || calls[0].Status != store.CallSucceeded || calls[0].Result != "deployed" {
		t.Fatalf("calls %+v, %v: want the tool's result stored", calls, err)
	}
	v, err := New(db, Config{Toolkits: table}).Continue(ctx, ie.RunID)
	if err != nil || v.Status != store.Completed || v.Output != "done: deployed" || tool.calls.Load() != 1 {
		t.Fatalf("continue: %+v, %v, tool ran %d times", v, err, tool.calls.Load())
	}
}

// Past the grace period (the context ends) the tool is stopped and its
// call recorded interrupted, for a human: never a failure for the model.
// The run rests suspended, its call pending, as every read then says.
func TestStopPastGraceInterruptsTheCall(t *testing.T) {
	g, table, tool := stopSetup(t)
	db := openDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	e := New(db, Config{Toolkits: table, Stop: ctx.Done()})
	errc := make(chan error, 1)
	go func() { _, err := e.Start(ctx, g, StartOptions{Agent: "a", Input: "x"}); errc <- err }()
	<-tool.started
	cancel()
	var ie *InterruptedError
	if err := <-errc; !errors.As(err, &ie) {
		t.Fatalf("Start: %v, want an InterruptedError", err)
	}
	calls, err := db.Calls(context.Background(), ie.RunID)
	if err != nil || len(calls) != 1 || calls[0].Status != store.CallInterrupted || calls[0].Kind != store.KindInterrupted ||
		!strings.HasPrefix(calls[0].Result, "interrupted: agentctl was stopped") {
		t.Fatalf("calls %+v, %v: want call_1 interrupted", calls, err)
	}
	v, err := New(db, Config{Toolkits: table}).Inspect(context.Background(), ie.RunID)
	if err != nil || v.Status != store.Suspended || len(v.Pending) != 1 || tool.calls.Load() != 1 {
		t.Fatalf("after the stop: %+v, %v, tool ran %d times; want it suspended, waiting for a human", v, err, tool.calls.Load())
	}
	if r, err := db.Run(context.Background(), ie.RunID); err != nil || r.Owner != "" || r.Status != store.Suspended {
		t.Fatalf("run after stop: %+v, %v; want it released", r, err)
	}
}
