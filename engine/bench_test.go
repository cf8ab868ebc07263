package engine

import (
	"context"
	"testing"

	"github.com/agentctl/agentctl/engine/store"
)

const benchSpec = `
version: 1
models:
  script:
    provider: scripted
    turns:
      - toolCalls: [{tool: check, args: {service: nginx}}]
      - toolCalls: [{tool: restart, args: {service: nginx}}]
      - text: done
tools:
  check:
    input: {type: object, properties: {service: {type: string}}, required: [service]}
    output: "${{ input.service }} is down"
  restart:
    input: {type: object, properties: {service: {type: string}}, required: [service]}
    output: "restarted ${{ input.service }}"
    requireApproval: true
agents:
  oncall: {model: script, tools: [check, restart]}
`

// BenchmarkRunToSuspension: in process, from Start to the run suspended
// on its approval (two model turns, one executed tool call).
func BenchmarkRunToSuspension(b *testing.B) {
	ctx := context.Background()
	e := New(openDB(b), Config{})
	g := compile(b, benchSpec)
	b.ReportAllocs()
	for b.Loop() {
		v, err := e.Start(ctx, g, StartOptions{Agent: "oncall", Input: "nginx is down"})
		if err != nil || v.Status != store.Suspended {
			b.Fatalf("%v %v", v, err)
		}
	}
}

// BenchmarkLoadSnapshot: what a cold approve pays to recompile the run's
// spec from its snapshot.
func BenchmarkLoadSnapshot(b *testing.B) {
	g := compile(b, benchSpec)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadSnapshot(g.snapshot, nil); err != nil {
			b.Fatal(err)
		}
	}
}
