// Package model is the engine's model interface (Model, Request,
// Response) and turns model declarations into models. Providers are
// built on langchaingo, behind one adapter; which providers exist is a
// Registry value passed to the engine, so tests and embedders choose
// their own.
package model

import (
	"context"
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentctl/agentctl/engine/model/cassette"
	"github.com/agentctl/agentctl/engine/model/scripted"
	"github.com/agentctl/agentctl/spec"
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
		spec.ProviderReplay: func(_ context.Context, m *spec.Model) (llms.Model, error) {
			return cassette.Load(m.Cassette, "")
		},
		spec.ProviderOpenAI:    OpenAI,
		spec.ProviderGoogleAI:  OpenAI,
		spec.ProviderMistral:   OpenAI,
		spec.ProviderOllama:    OpenAI,
		spec.ProviderAnthropic: Anthropic,
	}
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

// Final reports whether err, a Generate failure, would recur however
// often the same request is repeated: scripted turns exhausted, a request
// the cassette did not record. Other failures (the network, 5xx, 429, a
// key missing or refused) may pass once someone acts.
func Final(err error) bool {
	return errors.Is(err, scripted.ErrExhausted) || errors.Is(err, cassette.ErrMismatch)
}

// New builds the model m declares.
func (r Registry) New(ctx context.Context, m *spec.Model) (Model, error) {
	p, ok := r[m.Provider]
	if !ok {
		return nil, fmt.Errorf("model %s: provider %q is not available", m.Name, m.Provider)
	}
	l, err := p(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", m.Name, err)
	}
	return llm{m: l}, nil
}
