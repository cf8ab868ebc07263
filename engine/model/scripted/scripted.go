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
// follow the last assistant message). An autoResume extraction (a turn
// that only calls spec.ResumeTool) counts as a turn but leaves results
// alone: after a resume, results hold the resumed call's result, not
// "Resume data accepted".
func (s *Model) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	turn, calls, input, results := replayed(msgs)
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

// replayed reads a conversation: the turns played, the tool calls made,
// the last user message and the results that follow the last assistant
// message other than an autoResume extraction.
func replayed(msgs []llms.MessageContent) (turn, calls int, input string, results []any) {
	extraction := map[string]bool{} // ids of spec.ResumeTool calls
	for _, m := range msgs {
		switch m.Role {
		case llms.ChatMessageTypeAI:
			turn++
			n, resumes := 0, 0
			for _, p := range m.Parts {
				if tc, ok := p.(llms.ToolCall); ok {
					calls, n = calls+1, n+1
					if tc.FunctionCall != nil && tc.FunctionCall.Name == spec.ResumeTool {
						resumes++
						extraction[tc.ID] = true
					}
				}
			}
			if n == 0 || resumes < n {
				results = results[:0]
			}
		case llms.ChatMessageTypeHuman:
			input = text(m)
		case llms.ChatMessageTypeTool:
			for _, p := range m.Parts {
				if r, ok := p.(llms.ToolCallResponse); ok && !extraction[r.ToolCallID] {
					results = append(results, r.Content)
				}
			}
		}
	}
	return turn, calls, input, results
}
