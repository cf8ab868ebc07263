package model

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/engine/model/modeltest"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/spec/tmpl"
)

// Gemini, Mistral and Ollama speak the OpenAI protocol with max_tokens,
// each with its own key variable (Ollama needs none).
func TestOpenAICompatibleProviders(t *testing.T) {
	for _, tc := range []struct {
		provider, env, key string
	}{
		{spec.ProviderGoogleAI, "GEMINI_API_KEY", "g-key"},
		{spec.ProviderMistral, "MISTRAL_API_KEY", "m-key"},
		{spec.ProviderOllama, "", "ollama"},
		{spec.ProviderOpenAI, "OPENAI_API_KEY", "o-key"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			for _, v := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "MISTRAL_API_KEY", "OPENAI_API_KEY"} {
				t.Setenv(v, "")
			}
			if tc.env != "" {
				t.Setenv(tc.env, tc.key)
			}
			srv := modeltest.OpenAI(modeltest.Options{})
			defer srv.Close()
			llm, err := Default().New(context.Background(), &spec.Model{Name: "m", Provider: tc.provider, Model: "x", BaseURL: srv.URL + "/", Retries: -1})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := llm.Generate(context.Background(), &Request{Messages: []Message{{Role: User, Text: "hi"}}, MaxTokens: 50})
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Text; got != "done: hi" {
				t.Errorf("answer %q", got)
			}
			r := srv.Requests()[0]
			var body map[string]any
			json.Unmarshal(r.Body, &body)
			legacy := tc.provider != spec.ProviderOpenAI
			if _, ok := body["max_tokens"]; ok != legacy {
				t.Errorf("max_tokens sent: %v, want %v: %s", ok, legacy, r.Body)
			}
			if _, ok := body["temperature"]; ok {
				t.Errorf("temperature sent though not set: %s", r.Body)
			}
			if got := r.Header.Get("Authorization"); got != "Bearer "+tc.key {
				t.Errorf("Authorization %q", got)
			}
		})
	}
}

func TestAPIKeyErrors(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv("GOOGLE_API_KEY", "")
	t.Setenv("TEAM_KEY", "")
	key, err := tmpl.Parse("${{ env.TEAM_KEY }}", tmpl.Vars{"env": map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		m    spec.Model
		want string
	}{
		{spec.Model{Name: "c", Provider: spec.ProviderAnthropic, Model: "x"}, "model c: no API key: set ANTHROPIC_API_KEY or declare apiKey"},
		{spec.Model{Name: "g", Provider: spec.ProviderGoogleAI, Model: "x"}, "model g: no API key: set GEMINI_API_KEY or GOOGLE_API_KEY or declare"},
		{spec.Model{Name: "t", Provider: spec.ProviderOpenAI, Model: "x", APIKey: key}, "model t: apiKey ${{ env.TEAM_KEY }} is empty: set TEAM_KEY"},
	} {
		_, err := Default().New(context.Background(), &tc.m)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.m.Provider, err, tc.want)
		}
	}
	t.Setenv("GOOGLE_API_KEY", "set")
	if _, err := Default().New(context.Background(), &spec.Model{Name: "g", Provider: spec.ProviderGoogleAI, Model: "x"}); err != nil {
		t.Errorf("GOOGLE_API_KEY not read: %v", err)
	}
}

func TestIsToolDelta(t *testing.T) {
	for chunk, want := range map[string]bool{
		`[{"id":"call_1","type":"function","function":{"name":"x","arguments":""}}]`: true,
		`[{"type":"","function":{"name":"","arguments":"{\"a\":"}}]`:                 true,
		`{"name":"x","arguments":"{}"}`:                                              true,
		`[{"a":1}]`:                                                                  false,
		`[{`:                                                                         false,
		`{"name":"x"}`:                                                               false,
		`hello `:                                                                     false,
	} {
		if got := isToolDelta([]byte(chunk)); got != want {
			t.Errorf("isToolDelta(%s) = %v", chunk, got)
		}
	}
}

// KeyVars names what a model's key is read from, declared or its
// provider's usual variables; a scripted or replayed model takes none,
// so nothing of its text is cut for a key it does not use.
func TestKeyVars(t *testing.T) {
	key, err := tmpl.Parse("${{ env.OPS_KEY }}", tmpl.Vars{"env": map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	declared := spec.Model{Provider: spec.ProviderOpenAI, APIKey: key}
	for _, tc := range []struct {
		m    spec.Model
		want string
	}{
		{declared, "OPS_KEY"},
		{spec.Model{Provider: spec.ProviderOpenAI}, "OPENAI_API_KEY"},
		{spec.Model{Provider: spec.ProviderGoogleAI}, "GEMINI_API_KEY GOOGLE_API_KEY"},
		{spec.Model{Provider: spec.ProviderAnthropic}, "ANTHROPIC_API_KEY"},
		{spec.Model{Provider: spec.ProviderOllama}, ""},
		{spec.Model{Provider: spec.ProviderScripted}, ""},
		{spec.Model{Provider: spec.ProviderReplay}, ""},
	} {
		if got := strings.Join(KeyVars(&tc.m), " "); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.m.Provider, got, tc.want)
		}
	}
}
