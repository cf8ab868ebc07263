package model

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/agentctl/agentctl/spec"
)

// OpenAI builds a model on an OpenAI-compatible chat completions endpoint:
// OpenAI itself (provider openai), vLLM, LM Studio or LiteLLM (openai with
// baseURL), Gemini (googleai), Mistral (mistral) and Ollama (ollama).
func OpenAI(_ context.Context, m *spec.Model) (llms.Model, error) {
	key, err := apiKey(m)
	if err != nil {
		return nil, err
	}
	client := newClient(m.Retries, m.Timeout)
	client.Transport = &rewrite{base: client.Transport, path: "/chat/completions", temperature: m.Temperature != nil}
	llm, err := openai.New(
		openai.WithModel(m.Model),
		openai.WithBaseURL(baseURL(m)),
		openai.WithToken(key),
		openai.WithHTTPClient(client),
	)
	if err != nil {
		return nil, err
	}
	return &openAIModel{llm: llm, legacyMaxTokens: endpointOf(m.Provider).legacyMaxTokens}, nil
}

// openAIModel adapts langchaingo's openai client: it picks the max-tokens
// field the server knows, and passes on only text to a streaming
// callback.
type openAIModel struct {
	llm             *openai.LLM
	legacyMaxTokens bool
}

// GenerateContent implements llms.Model.
func (o *openAIModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	var co llms.CallOptions
	for _, opt := range opts {
		opt(&co)
	}
	if o.legacyMaxTokens {
		opts = append(opts, openai.WithLegacyMaxTokensField())
	}
	if f := co.StreamingFunc; f != nil {
		opts = append(opts, llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error {
			if len(chunk) == 0 || isToolDelta(chunk) {
				return nil
			}
			return f(ctx, chunk)
		}))
	}
	return o.llm.GenerateContent(ctx, msgs, opts...)
}

// Call implements llms.Model.
func (o *openAIModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, o, prompt, opts...)
}

// isToolDelta reports whether a streamed chunk is not text but the JSON
// langchaingo makes of a tool-call delta: an array of objects with type
// and function, or a legacy function call object.
func isToolDelta(chunk []byte) bool {
	switch {
	case bytes.HasPrefix(chunk, []byte(`[{`)):
		var calls []map[string]json.RawMessage
		if json.Unmarshal(chunk, &calls) != nil || len(calls) == 0 {
			return false
		}
		for _, c := range calls {
			if _, ok := c["function"]; !ok {
				return false
			}
			if _, ok := c["type"]; !ok {
				return false
			}
		}
		return true
	case bytes.HasPrefix(chunk, []byte(`{"name":`)):
		var fc map[string]json.RawMessage
		if json.Unmarshal(chunk, &fc) != nil || len(fc) != 2 {
			return false
		}
		_, ok := fc["arguments"]
		return ok
	}
	return false
}
