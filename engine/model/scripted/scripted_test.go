package scripted

import (
	"context"
	"errors"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentctl/agentctl/spec"
)

func model(t *testing.T) *Model {
	t.Helper()
	s, err := spec.Load([]spec.Source{{Name: "m.yaml", Data: []byte(`
version: 1
models:
  m:
    provider: scripted
    turns:
      - toolCalls: [{tool: t, args: {n: 1}}, {tool: t}]
      - text: "${{ input }}: ${{ join(results, ',') }}"
tools:
  t: {output: ok}
`)}})
	if err != nil {
		t.Fatal(err)
	}
	return New(s.Models["m"])
}

// The turn played is the number of assistant messages so far: a run
// continued by another process gets the next turn.
func TestTurnsFollowTheConversation(t *testing.T) {
	ctx := context.Background()
	m := model(t)
	conv := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "go")}
	resp, err := m.GenerateContent(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Choices[0].ToolCalls
	if len(calls) != 2 || calls[0].ID != "call_1" || calls[1].ID != "call_2" ||
		calls[0].FunctionCall.Arguments != `{"n":1}` || calls[1].FunctionCall.Arguments != `{}` {
		t.Fatalf("turn 1: %+v", calls)
	}
	ai := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{calls[0], calls[1]}}
	conv = append(conv, ai,
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "call_1", Content: "a"}}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "call_2", Content: "b"}}},
	)
	resp, err = m.GenerateContent(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Content; got != "go: a,b" {
		t.Errorf("turn 2 text %q, want %q", got, "go: a,b")
	}
	conv = append(conv, llms.TextParts(llms.ChatMessageTypeAI, "go: a,b"))
	_, err = m.GenerateContent(ctx, conv)
	if !errors.Is(err, ErrExhausted) || err.Error() != "scripted turns exhausted: the run needs turn 3, and m.yaml:4:3 declares 2" {
		t.Errorf("turn 3: %v", err)
	}
}

// An autoResume extraction is a turn, but results after it are the
// resumed call's, not the extraction's.
func TestResultsSkipExtraction(t *testing.T) {
	tool := func(id, content string) llms.MessageContent {
		return llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: id, Content: content}}}
	}
	call := func(id, name string) llms.MessageContent {
		return llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: name, Arguments: "{}"}}}}
	}
	conv := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "ship"),
		call("call_1", "deploy"), tool("call_1", "deployed"),
		llms.TextParts(llms.ChatMessageTypeHuman, "CHG-42"),
		call("call_2", spec.ResumeTool), tool("call_2", "Resume data accepted for call call_1."),
	}
	turn, calls, input, results := replayed(conv)
	if turn != 2 || calls != 2 || input != "CHG-42" || len(results) != 1 || results[0] != "deployed" {
		t.Errorf("replayed: turn %d, calls %d, input %q, results %v; want 2, 2, CHG-42, [deployed]", turn, calls, input, results)
	}
	conv = append(conv, call("call_3", "deploy"), tool("call_3", "again"))
	if _, _, _, results = replayed(conv); len(results) != 1 || results[0] != "again" {
		t.Errorf("after a later turn: results %v, want [again]", results)
	}
}
