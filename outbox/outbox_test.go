package outbox

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlite"
	"github.com/agentctl/agentctl/notify"
	"github.com/agentctl/agentctl/spec"
)

const waits = `
version: 1
models: {m: {provider: scripted, turns: [{toolCalls: [{tool: t, args: {}}]}, {text: done}]}}
tools: {t: {input: {type: object}, output: ok, requireApproval: true}}
agents: {a: {model: m, tools: [t]}}
`

// A run that suspends between Start and the outbox's first Queue is
// notified: Start set the cursor before it (found by a server whose
// first request came before its outbox's first Queue, under load).
func TestStartBeforeFirstQueue(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "a.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	targets := func(context.Context, *store.Run) ([]notify.Target, error) {
		return []notify.Target{{On: []notify.Type{notify.Approval}, Command: []string{"true"}}}, nil
	}
	b := New(Options{Store: db, Source: store.SourceServer, Targets: targets})
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load([]spec.Source{{Name: "s.yaml", Data: []byte(waits)}})
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(db, engine.Config{})
	g, err := e.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := e.Start(ctx, g, engine.StartOptions{Agent: "a", Input: "x"}); err != nil || v.Status != store.Suspended {
		t.Fatalf("start: %v %v", v, err)
	}
	ids, err := b.Queue(ctx)
	if err != nil || len(ids) != 1 {
		t.Fatalf("queued %v (%v), want the approval's notification", ids, err)
	}
}
