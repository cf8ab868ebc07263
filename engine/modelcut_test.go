package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/engine/model/scripted"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlite"
	"github.com/agentctl/agentctl/spec"
)

// The secrets of TestModelOutputCut: a model's key, and a variable an
// exec tool reads, which the model has no business knowing yet echoes.
const (
	cutModelKey  = "sk-model-Q7w9Zr2/Lp4+Xv8N"
	cutToolToken = "tok-tool-M3k8Vb6?Hd1~Jf5T"
)

// keyForms are the forms of v a test looks for: as it is, in base64
// (standard, URL-safe, unpadded), hex (both cases), URL-escaped, and
// each one's halves, as a leak split across two chunks would leave them.
func keyForms(v string) []string {
	b := []byte(v)
	whole := []string{v, base64.StdEncoding.EncodeToString(b), base64.URLEncoding.EncodeToString(b),
		base64.RawStdEncoding.EncodeToString(b), hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)), url.QueryEscape(v)}
	out := whole
	for _, f := range whole {
		out = append(out, f[:len(f)/2], f[len(f)/2:])
	}
	return out
}

// echoText is what the echoing model says: both secrets in every form.
func echoText(prefix string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, v := range []string{cutModelKey, cutToolToken} {
		for _, f := range keyForms(v)[:7] {
			b.WriteString(" [" + f + "]")
		}
	}
	return b.String()
}

// echoModel is a langchaingo model that echoes the secrets: in its text,
// streamed in chunks that split every form, in a call's id, name and
// arguments; its second turn answers; provider "broken" fails with both
// secrets in its error, as a provider that echoes a key does.
type echoModel struct{ m *spec.Model }

func (e echoModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	if e.m.Name == "broken" {
		return nil, fmt.Errorf("401: Incorrect API key provided: %s (%s)", cutModelKey,
			base64.StdEncoding.EncodeToString([]byte(cutToolToken)))
	}
	var o llms.CallOptions
	for _, opt := range opts {
		opt(&o)
	}
	turn := 0
	for _, m := range msgs {
		if m.Role == llms.ChatMessageTypeAI {
			turn++
		}
	}
	text := echoText(fmt.Sprintf("turn %d:", turn+1))
	if o.StreamingFunc != nil {
		for i := 0; i < len(text); i += 7 {
			if err := o.StreamingFunc(ctx, []byte(text[i:min(i+7, len(text))])); err != nil {
				return nil, err
			}
		}
	}
	c := &llms.ContentChoice{Content: text}
	if turn == 0 {
		args, _ := json.Marshal(map[string]string{"note": "see " + cutToolToken + " and " + url.QueryEscape(cutModelKey)})
		c.ToolCalls = []llms.ToolCall{{ID: "call_" + cutModelKey, Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "probe", Arguments: string(args)}}}
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{c}}, nil
}

func (e echoModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, e, prompt, opts...)
}

// TestModelOutputCut: a model that echoes its key and a tool's secret,
// in every encoding, in its streamed text, a call's id and arguments and
// its errors, has them cut before anything keeps or shows them: the
// live text (each chunk, and all of them joined), the stored events,
// run and calls, the database file, the cassette, and the error a
// stalled run keeps. The tool gets the arguments cut.
func TestModelOutputCut(t *testing.T) {
	t.Setenv("CUT_MODEL_KEY", cutModelKey)
	t.Setenv("CUT_TOOL_TOKEN", cutToolToken)
	dir := t.TempDir()
	got := filepath.Join(dir, "got.txt")
	src := `
version: 1
models:
  echo: {provider: openai, model: fake, apiKey: "${{ env.CUT_MODEL_KEY }}"}
  broken: {provider: openai, model: fake, apiKey: "${{ env.CUT_MODEL_KEY }}"}
tools:
  probe:
    input: {type: object, properties: {note: {type: string}}}
    exec:
      command: [sh, -c, 'printf %s "$1" > ` + got + `', sh, "${{ input.note }}"]
      env: {T: "${{ env.CUT_TOOL_TOKEN }}"}
agents:
  oncall: {model: echo, tools: [probe]}
  failing: {model: broken, tools: [probe]}
`
	reg := model.Registry{
		spec.ProviderOpenAI:   func(_ context.Context, m *spec.Model) (llms.Model, error) { return echoModel{m: m}, nil },
		spec.ProviderScripted: func(_ context.Context, m *spec.Model) (llms.Model, error) { return scripted.New(m), nil },
	}
	g := compileAll(t, src, reg, nil)
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "a.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mu sync.Mutex
	var live []string
	cassette := filepath.Join(dir, "cassette.jsonl")
	e := New(db, Config{Models: reg, Record: cassette, OnEvent: func(ev store.Event) {
		mu.Lock()
		defer mu.Unlock()
		live = append(live, string(ev.JSON()))
	}})
	v, err := e.Start(ctx, g, StartOptions{Agent: "oncall", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != store.Completed {
		t.Fatalf("run: %s %s", v.Status, v.Error)
	}
	want := "see [env.CUT_TOOL_TOKEN] and [env.CUT_MODEL_KEY]"
	if b, err := os.ReadFile(got); err != nil || string(b) != want {
		t.Errorf("the tool got %q (%v), want %q", b, err, want)
	}
	if !strings.HasPrefix(v.Output, "turn 2: [[env.CUT_MODEL_KEY]]") {
		t.Errorf("output %q", v.Output)
	}
	f, err := e.Start(ctx, g, StartOptions{Agent: "failing", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Status != store.Stalled || !strings.Contains(f.Error, "Incorrect API key provided: [env.CUT_MODEL_KEY] ([env.CUT_TOOL_TOKEN])") {
		t.Errorf("failing run: %s %q", f.Status, f.Error)
	}

	sinks := map[string]string{"live events": strings.Join(live, "\n"), "output": v.Output, "error": f.Error}
	var joined strings.Builder
	for _, l := range live {
		var ev struct{ Type, Text string }
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Type == string(EventTextDelta) {
			joined.WriteString(ev.Text)
		}
	}
	sinks["live text, joined"] = joined.String()
	if !strings.Contains(joined.String(), "turn 1: [[env.CUT_MODEL_KEY]]") {
		t.Errorf("live text: %q", joined.String())
	}
	for _, id := range []string{v.RunID, f.RunID} {
		d, err := e.Detail(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(d)
		sinks["detail "+id] = string(b)
		evs, _, err := e.Events(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			sinks["events "+id] += string(ev.JSON()) + "\n"
		}
	}
	for _, name := range []string{"a.db", "a.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		sinks[name] = string(b)
	}
	b, err := os.ReadFile(cassette)
	if err != nil || !bytes.Contains(b, []byte(`"toolCalls":[{"id":"call_[env.CUT_MODEL_KEY]","name":"probe"`)) {
		t.Errorf("cassette: %s %v", b, err)
	}
	sinks["cassette"] = string(b)
	for sink, text := range sinks {
		for _, v := range []string{cutModelKey, cutToolToken} {
			for _, form := range keyForms(v) {
				if strings.Contains(text, form) {
					t.Errorf("%s holds %q (a form of %s)", sink, form, v)
				}
			}
		}
	}
}
