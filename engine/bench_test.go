package engine

import (
	"testing"
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
