package model

import (
	"context"
	"errors"

	"github.com/tmc/langchaingo/llms"
)

// llm adapts a langchaingo model to Model: the one place the engine's
// types meet langchaingo's.
type llm struct{ m llms.Model }

// Generate implements Model.
func (l llm) Generate(ctx context.Context, req *Request) (*Response, error) {
	opts := callOptions(req)
	if req.OnText != nil {
		opts = append(opts, llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
			if len(chunk) > 0 {
				req.OnText(string(chunk))
			}
			return nil
		}))
	}
	resp, err := l.m.GenerateContent(ctx, messages(req.Messages), opts...)
	if err != nil {
		return nil, err
	}
	if resp == nil || len(resp.Choices) == 0 {
		return nil, errors.New("the model returned no choices")
	}
	c := resp.Choices[0]
	out := &Response{Text: c.Content, Usage: Usage{
		InputTokens:  firstInt(c.GenerationInfo, "PromptTokens", "InputTokens", "input_tokens"),
		OutputTokens: firstInt(c.GenerationInfo, "CompletionTokens", "OutputTokens", "output_tokens"),
	}}
	for _, tc := range c.ToolCalls {
		if tc.FunctionCall != nil {
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Name: tc.FunctionCall.Name, Args: tc.FunctionCall.Arguments})
		}
	}
	return out, nil
}

// callOptions renders what req asks besides its messages and streaming
// as langchaingo's options: the tools offered, the one forced, the
// temperature and the token limit.
func callOptions(req *Request) []llms.CallOption {
	var opts []llms.CallOption
	if len(req.Tools) > 0 {
		tools := make([]llms.Tool, len(req.Tools))
		for i, t := range req.Tools {
			tools[i] = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
				Name: t.Name, Description: t.Description, Parameters: t.Parameters}}
		}
		opts = append(opts, llms.WithTools(tools))
	}
	if req.Force != "" {
		opts = append(opts, llms.WithToolChoice(llms.ToolChoice{Type: "function", Function: &llms.FunctionReference{Name: req.Force}}))
	}
	if req.Temperature != nil {
		opts = append(opts, llms.WithTemperature(*req.Temperature))
	}
	if req.MaxTokens > 0 {
		opts = append(opts, llms.WithMaxTokens(req.MaxTokens))
	}
	return opts
}

// messages renders a conversation as langchaingo's messages: each tool
// result its own message (OpenAI wants one message per result).
func messages(ms []Message) []llms.MessageContent {
	out := make([]llms.MessageContent, 0, len(ms))
	for _, m := range ms {
		switch m.Role {
		case System:
			out = append(out, llms.TextParts(llms.ChatMessageTypeSystem, m.Text))
		case User:
			out = append(out, llms.TextParts(llms.ChatMessageTypeHuman, m.Text))
		case ToolRole:
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: m.CallID, Name: m.Tool, Content: m.Text},
			}})
		case Assistant:
			mc := llms.MessageContent{Role: llms.ChatMessageTypeAI}
			if m.Text != "" {
				mc.Parts = append(mc.Parts, llms.TextContent{Text: m.Text})
			}
			for _, tc := range m.ToolCalls {
				mc.Parts = append(mc.Parts, llms.ToolCall{ID: tc.ID, Type: "function",
					FunctionCall: &llms.FunctionCall{Name: tc.Name, Arguments: tc.Args}})
			}
			out = append(out, mc)
		}
	}
	return out
}

// firstInt reads the first of keys that holds a number.
func firstInt(m map[string]any, keys ...string) int {
	for _, k := range keys {
		switch v := m[k].(type) {
		case int:
			return v
		case int32:
			return int(v)
		case int64:
			return int(v)
		case float64:
			return int(v)
		}
	}
	return 0
}
