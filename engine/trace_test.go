package engine

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentctl/agentctl/engine/store"
)

const traceSpec = `
version: 1
models:
  lead:
    provider: scripted
    turns:
      - toolCalls: [{tool: ops, args: {task: "restart nginx"}}]
      - text: "lead: ${{ results[0] }}"
  ops:
    provider: scripted
    temperature: 0.2
    maxTokens: 300
    turns:
      - toolCalls: [{tool: restart, args: {service: nginx, token: "${{ input }}"}}]
      - text: "ops: ${{ results[0] }}"
tools:
  restart:
    requireApproval: true
    input: {type: object, properties: {service: {type: string}, token: {type: string}}}
    exec: {command: [echo, restarted]}
agents:
  lead: {model: lead, agents: [ops]}
  ops: {model: ops, tools: [restart]}
`

// recorder is a tracer that keeps its spans.
func recorder() (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	sr := tracetest.NewSpanRecorder()
	return sr, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
}

func attrOf(s sdktrace.ReadOnlySpan, k attribute.Key) attribute.Value {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func byName(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// A tree's spans nest as its runs do; the suspension is an event; the
// approval, made by another engine (a process days later), is a span of
// its own linked to the trace the run started in, saying who decided;
// no content is recorded by default.
func TestTraces(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	g := compile(t, traceSpec)
	sr, tp := recorder()
	e := New(db, Config{Tracer: tp.Tracer("test")})
	v, err := e.Start(ctx, g, StartOptions{Agent: "lead", Input: "s3cr3t-in-input"})
	if err != nil || v.Status != store.Suspended {
		t.Fatalf("start: %+v, %v", v, err)
	}
	first := sr.Ended()
	lead, ops := byName(first, "invoke_agent lead"), byName(first, "invoke_agent ops")
	deleg, chats := byName(first, "execute_tool ops"), byName(first, "chat ops")
	if len(lead) != 1 || len(ops) != 1 || len(deleg) != 1 || len(chats) != 1 {
		t.Fatalf("spans: %v", spanNames(first))
	}
	if ops[0].Parent().SpanID() != deleg[0].SpanContext().SpanID() || deleg[0].Parent().SpanID() != lead[0].SpanContext().SpanID() {
		t.Error("the child run's span is not under its delegation, under the parent's")
	}
	c := chats[0]
	if attrOf(c, attrOperation).AsString() != "chat" || attrOf(c, attrProvider).AsString() != "agentctl.scripted" ||
		attrOf(c, attrReqModel).AsString() != "ops" || attrOf(c, attrTemperature).AsFloat64() != 0.2 || attrOf(c, attrMaxTokens).AsInt64() != 300 {
		t.Errorf("chat span attributes: %v", c.Attributes())
	}
	if len(ops[0].Events()) != 1 || ops[0].Events()[0].Name != eventSuspended {
		t.Errorf("the suspending span's events: %v", ops[0].Events())
	}
	sr2, tp2 := recorder()
	e2 := New(db, Config{Tracer: tp2.Tracer("test")})
	if _, err := e2.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, By: "alice", OSUser: "alice"}); err != nil {
		t.Fatal(err)
	}
	later := sr2.Ended()
	dec := byName(later, "approve restart")
	if len(dec) != 1 || len(dec[0].Links()) != 1 || dec[0].Links()[0].SpanContext.TraceID() != lead[0].SpanContext().TraceID() {
		t.Fatalf("the approval's span: %v; want one linked to the run's first trace", spanNames(later))
	}
	if attrOf(dec[0], attrBy).AsString() != "alice" {
		t.Errorf("who decided: %v", dec[0].Attributes())
	}
	tools := byName(later, "execute_tool restart")
	if len(tools) != 1 || attrOf(tools[0], attrToolCallID).AsString() == "" || attrOf(tools[0], attrOutcome).AsString() != "succeeded" ||
		tools[0].SpanContext().TraceID() != dec[0].SpanContext().TraceID() {
		t.Errorf("the tool's span: %v", spanNames(later))
	}
	for _, s := range append(first, later...) {
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.Emit(), "s3cr3t") || strings.Contains(kv.Value.Emit(), "nginx") {
				t.Errorf("span %s holds content: %s=%s", s.Name(), kv.Key, kv.Value.Emit())
			}
		}
	}
}

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// With TraceContent, arguments, results and the model's text are
// recorded, with the tool's secrets cut out.
func TestTraceContent(t *testing.T) {
	t.Setenv("DEPLOY_TOKEN", "tok-0123456789abcdef")
	ctx := context.Background()
	g := compile(t, `
version: 1
models:
  m:
    provider: scripted
    turns:
      - toolCalls: [{tool: deploy, args: {note: "key tok-0123456789abcdef"}}]
      - text: "done"
tools:
  deploy:
    input: {type: object, properties: {note: {type: string}}}
    exec:
      command: [sh, -c, 'echo "deployed with $T"']
      env: {T: "${{ env.DEPLOY_TOKEN }}"}
agents:
  a: {model: m, tools: [deploy]}
`)
	sr, tp := recorder()
	e := New(openDB(t), Config{Tracer: tp.Tracer("test"), TraceContent: true})
	if _, err := e.Start(ctx, g, StartOptions{Agent: "a", Input: "go"}); err != nil {
		t.Fatal(err)
	}
	tools := byName(sr.Ended(), "execute_tool deploy")
	if len(tools) != 1 {
		t.Fatalf("spans: %v", spanNames(sr.Ended()))
	}
	args, result := attrOf(tools[0], attrToolArgs).AsString(), attrOf(tools[0], attrToolResult).AsString()
	if !strings.Contains(args, "key ") || !strings.Contains(result, "deployed with") {
		t.Errorf("content: args %q, result %q", args, result)
	}
	for _, s := range sr.Ended() {
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.Emit(), "0123456789abcdef") {
				t.Errorf("span %s holds the secret: %s=%s", s.Name(), kv.Key, kv.Value.Emit())
			}
		}
	}
}
