// Package scripted is a language model that replays declared turns, so
// agents run offline and in CI. It implements llms.Model and keeps no
// state: the turn to play is the number of assistant messages already in
// the conversation, so a run resumed in another process goes on where it
// stopped.
package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentctl/agentctl/engine/model/internal/stream"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/spec/tmpl"
)

// ErrExhausted reports a run that asks for more turns than are declared.
var ErrExhausted = errors.New("scripted turns exhausted")

// Model replays a scripted model's turns.
type Model struct{ m *spec.Model }

var _ llms.Model = (*Model)(nil)

// New returns the model for a declaration with provider scripted.
func New(m *spec.Model) *Model { return &Model{m: m} }

// GenerateContent implements llms.Model. Turn text may use input (the
// last user message) and results (the contents of the tool results that
// follow the last assistant message).
func (s *Model) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	var turn, calls int
	var input string
	var results []any
	for _, m := range msgs {
		switch m.Role {
		case llms.ChatMessageTypeAI:
			turn++
			results = results[:0]
			for _, p := range m.Parts {
				if _, ok := p.(llms.ToolCall); ok {
					calls++
				}
			}
		case llms.ChatMessageTypeHuman:
			input = text(m)
		case llms.ChatMessageTypeTool:
			for _, p := range m.Parts {
				if r, ok := p.(llms.ToolCallResponse); ok {
					results = append(results, r.Content)
				}
			}
		}
	}
	if turn >= len(s.m.Turns) {
		return nil, fmt.Errorf("%w: the run needs turn %d, and %s declares %d",
			ErrExhausted, turn+1, s.m.Pos, len(s.m.Turns))
	}
	t := s.m.Turns[turn]
	env := tmpl.Env{"input": input, "results": results}
	choice := &llms.ContentChoice{StopReason: "stop"}
	if t.Text != nil {
		out, err := t.Text.Render(env)
		if err != nil {
			return nil, fmt.Errorf("turn %d (%s): %w", turn+1, t.Pos, err)
		}
		choice.Content = out
	}
	for _, c := range t.ToolCalls {
		args, err := c.Args.Eval(env)
		if err != nil {
			return nil, fmt.Errorf("turn %d (%s): %w", turn+1, c.Pos, err)
		}
		if args == nil {
			args = map[string]any{}
		}
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("turn %d (%s): %w", turn+1, c.Pos, err)
		}
		calls++
		choice.ToolCalls = append(choice.ToolCalls, llms.ToolCall{
			ID:           fmt.Sprintf("call_%d", calls),
			Type:         "function",
			FunctionCall: &llms.FunctionCall{Name: c.Tool, Arguments: string(b)},
		})
		choice.StopReason = "tool_calls"
	}
	if err := stream.Text(ctx, opts, choice.Content); err != nil {
		return nil, err
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}, nil
}

// Call implements llms.Model.
func (s *Model) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, s, prompt, opts...)
}

func text(m llms.MessageContent) string {
	var s string
	for _, p := range m.Parts {
		if t, ok := p.(llms.TextContent); ok {
			s += t.Text
		}
	}
	return s
}
