package model

import (
	"context"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"

	"github.com/agentctl/agentctl/spec"
)

// Anthropic builds a model on Anthropic's messages API.
//
// langchaingo's anthropic client (v0.1.14) sends only the first part of
// an assistant message, so all but the first of several tool calls would
// be lost, and it answers with one choice per content block. The adapter
// gives it one part per message and joins the choices back into one; its
// transport then merges consecutive messages of one role, so the server
// gets each assistant turn whole and all of a turn's tool results in the
// one user message that follows it, as the API requires.
func Anthropic(_ context.Context, m *spec.Model) (llms.Model, error) {
	key, err := apiKey(m)
	if err != nil {
		return nil, err
	}
	client := newClient(m.Retries, m.Timeout)
	client.Transport = &rewrite{base: client.Transport, path: "/messages", temperature: m.Temperature != nil, mergeRoles: true}
	llm, err := anthropic.New(
		anthropic.WithToken(key),
		anthropic.WithModel(m.Model),
		anthropic.WithBaseURL(baseURL(m)),
		anthropic.WithHTTPClient(client),
	)
	if err != nil {
		return nil, err
	}
	return &anthropicModel{llm: llm}, nil
}

type anthropicModel struct {
	llm *anthropic.LLM
}

// GenerateContent implements llms.Model.
func (a *anthropicModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	resp, err := a.llm.GenerateContent(ctx, onePartEach(msgs), opts...)
	if err != nil {
		return nil, err
	}
	return joinChoices(resp), nil
}

// Call implements llms.Model.
func (a *anthropicModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, a, prompt, opts...)
}

// onePartEach splits assistant and tool messages into one message per
// part, and drops messages without parts.
func onePartEach(msgs []llms.MessageContent) []llms.MessageContent {
	out := make([]llms.MessageContent, 0, len(msgs))
	for _, m := range msgs {
		switch {
		case len(m.Parts) == 0:
		case len(m.Parts) > 1 && (m.Role == llms.ChatMessageTypeAI || m.Role == llms.ChatMessageTypeTool):
			for _, p := range m.Parts {
				out = append(out, llms.MessageContent{Role: m.Role, Parts: []llms.ContentPart{p}})
			}
		default:
			out = append(out, m)
		}
	}
	return out
}

// joinChoices makes one choice of the choices langchaingo returns, one
// per content block: the text of all, the tool calls of all, the usage
// (the same in each) once.
func joinChoices(resp *llms.ContentResponse) *llms.ContentResponse {
	if len(resp.Choices) <= 1 {
		return resp
	}
	var text strings.Builder
	one := &llms.ContentChoice{}
	for i, c := range resp.Choices {
		if c == nil {
			continue
		}
		if i == 0 || one.GenerationInfo == nil {
			one.StopReason, one.GenerationInfo = c.StopReason, c.GenerationInfo
		}
		text.WriteString(c.Content)
		one.ToolCalls = append(one.ToolCalls, c.ToolCalls...)
	}
	one.Content = text.String()
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{one}}
}
