// Package model turns model declarations into langchaingo models. Which
// providers exist is a Registry value passed to the engine, so tests and
// embedders choose their own.
package model

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/agentctl/agentctl/engine/model/cassette"
	"github.com/agentctl/agentctl/engine/model/scripted"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/spec/tmpl"
)

// Provider builds a model from its declaration. Secrets are read from the
// environment here, at run time, and never leave the returned model.
type Provider func(ctx context.Context, m *spec.Model) (llms.Model, error)

// Registry maps provider names (spec.ProviderScripted, ...) to Providers.
type Registry map[string]Provider

// Default returns the providers agentctl ships with.
func Default() Registry {
	return Registry{
		spec.ProviderScripted: func(_ context.Context, m *spec.Model) (llms.Model, error) {
			return scripted.New(m), nil
		},
		spec.ProviderOpenAI: OpenAI,
		spec.ProviderReplay: func(_ context.Context, m *spec.Model) (llms.Model, error) {
			return cassette.Load(m.Cassette, "")
		},
	}
}

// Recording returns a registry whose models record every exchange to the
// cassette at path.
func (r Registry) Recording(path string) Registry {
	out := Registry{}
	for name, p := range r {
		out[name] = func(ctx context.Context, m *spec.Model) (llms.Model, error) {
			llm, err := p(ctx, m)
			if err != nil {
				return nil, err
			}
			return cassette.Record(llm, m.Name, path), nil
		}
	}
	return out
}

// Replaying returns a registry whose models, whatever their provider,
// answer from the cassette at path, without a network or credentials.
func (r Registry) Replaying(path string) Registry {
	out := Registry{}
	for name := range r {
		out[name] = func(_ context.Context, m *spec.Model) (llms.Model, error) {
			return cassette.Load(path, m.Name)
		}
	}
	return out
}

// New builds the model m declares.
func (r Registry) New(ctx context.Context, m *spec.Model) (llms.Model, error) {
	p, ok := r[m.Provider]
	if !ok {
		return nil, fmt.Errorf("model %s: provider %q is not available", m.Name, m.Provider)
	}
	llm, err := p(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", m.Name, err)
	}
	return llm, nil
}

// OpenAI builds a model on any OpenAI-compatible endpoint.
func OpenAI(_ context.Context, m *spec.Model) (llms.Model, error) {
	opts := []openai.Option{openai.WithModel(m.Model), openai.WithHTTPClient(newClient(m.Retries, m.Timeout))}
	if m.BaseURL != "" {
		opts = append(opts, openai.WithBaseURL(m.BaseURL))
	}
	key, err := apiKey(m)
	if err != nil {
		return nil, err
	}
	opts = append(opts, openai.WithToken(key))
	return openai.New(opts...)
}

// apiKey renders the declared key over the environment; without one it
// falls back to OPENAI_API_KEY.
func apiKey(m *spec.Model) (string, error) {
	if m.APIKey == nil {
		if k := os.Getenv("OPENAI_API_KEY"); k != "" {
			return k, nil
		}
		return "", fmt.Errorf("no API key: set OPENAI_API_KEY or declare apiKey: ${{ env.NAME }}")
	}
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	k, err := m.APIKey.Render(tmpl.Env{"env": env})
	if err != nil {
		return "", fmt.Errorf("apiKey: %w", err)
	}
	if k == "" {
		return "", fmt.Errorf("apiKey %s is empty: set the variable it names", m.APIKey.Source())
	}
	return k, nil
}
