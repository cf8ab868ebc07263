package model

import (
	"fmt"
	"os"
	"strings"

	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/spec/tmpl"
)

// endpoint is what a hosted provider defaults to.
type endpoint struct {
	baseURL string
	// keyEnv are the variables an API key is read from when the spec
	// declares none, first set wins; none means no key is needed.
	keyEnv []string
	// legacyMaxTokens sends max_tokens rather than OpenAI's newer
	// max_completion_tokens, for servers that know only the former.
	legacyMaxTokens bool
}

// endpointOf returns the defaults of a hosted provider. Gemini and Mistral
// are reached on their OpenAI-compatible chat endpoints, through
// langchaingo's openai client: it round-trips parallel tool calls with
// their ids, which langchaingo's mistral client does not, and spares the
// binary the gRPC and Google Cloud libraries its googleai client needs.
func endpointOf(provider string) endpoint {
	switch provider {
	case spec.ProviderAnthropic:
		return endpoint{baseURL: "https://api.anthropic.com/v1", keyEnv: []string{"ANTHROPIC_API_KEY"}}
	case spec.ProviderGoogleAI:
		return endpoint{baseURL: "https://generativelanguage.googleapis.com/v1beta/openai",
			keyEnv: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, legacyMaxTokens: true}
	case spec.ProviderMistral:
		return endpoint{baseURL: "https://api.mistral.ai/v1", keyEnv: []string{"MISTRAL_API_KEY"}, legacyMaxTokens: true}
	case spec.ProviderOllama:
		return endpoint{baseURL: "http://localhost:11434/v1", legacyMaxTokens: true}
	}
	return endpoint{baseURL: "https://api.openai.com/v1", keyEnv: []string{"OPENAI_API_KEY"}}
}

// baseURL is the endpoint m declares, or its provider's, without a
// trailing slash.
func baseURL(m *spec.Model) string {
	u := m.BaseURL
	if u == "" {
		u = endpointOf(m.Provider).baseURL
	}
	return strings.TrimRight(u, "/")
}

// BaseURL returns the endpoint a hosted model is called at: its baseURL,
// else its provider's own.
func BaseURL(m *spec.Model) string { return baseURL(m) }

// KeyVars names the environment variables a model's API key comes from:
// those its apiKey reads, else its provider's usual ones; none for a
// scripted or replayed model, which takes no key. Their values are
// secrets: cut from anything stored or shown.
func KeyVars(m *spec.Model) []string {
	switch {
	case m.APIKey != nil:
		return m.APIKey.EnvNames()
	case m.Provider == spec.ProviderScripted || m.Provider == spec.ProviderReplay:
		return nil
	}
	return endpointOf(m.Provider).keyEnv
}

// apiKey renders the declared key over the environment; without one it
// reads the provider's usual variables. The error names the variable to
// set.
func apiKey(m *spec.Model) (string, error) {
	ep := endpointOf(m.Provider)
	if m.APIKey == nil {
		for _, name := range ep.keyEnv {
			if k := os.Getenv(name); k != "" {
				return k, nil
			}
		}
		if len(ep.keyEnv) == 0 {
			return m.Provider, nil // a placeholder: the server ignores it
		}
		return "", fmt.Errorf("no API key: set %s or declare apiKey: ${{ env.NAME }}", strings.Join(ep.keyEnv, " or "))
	}
	env := map[string]string{} // only the variables apiKey names
	for _, n := range m.APIKey.EnvNames() {
		if v, ok := os.LookupEnv(n); ok {
			env[n] = v
		}
	}
	k, err := m.APIKey.Render(tmpl.Env{"env": env})
	if err != nil {
		return "", fmt.Errorf("apiKey: %w", err)
	}
	if k == "" {
		names := m.APIKey.EnvNames()
		if len(names) == 0 {
			return "", fmt.Errorf("apiKey %s is empty", m.APIKey.Source())
		}
		return "", fmt.Errorf("apiKey %s is empty: set %s", m.APIKey.Source(), strings.Join(names, " and "))
	}
	return k, nil
}
