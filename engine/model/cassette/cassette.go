// Package cassette records a model's requests and responses to a file and
// replays them without a network: agent runs against real models become
// repeatable tests. A cassette is JSON lines, one exchange a line, and
// holds only what the model saw and said, never credentials: the engine
// records each answer once it has cut the run's secrets out of it.
package cassette

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentctl/agentctl/engine/model/internal/stream"
)

// Format is the version of the exchanges this package records. Format 2
// (format: 2 on each line) holds each tool's description as well as its
// name and input schema. Exchanges without a format were recorded before
// (format 1): they hold no descriptions and are compared without them.
const Format = 2

// Exchange is one recorded model call.
type Exchange struct {
	Model    string          `json:"model"`
	Format   int             `json:"format,omitempty"`
	Request  json.RawMessage `json:"request"`
	Response Response        `json:"response"`
}

// Response is what the model answered.
type Response struct {
	Content   string     `json:"content,omitempty"`
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
}

// ToolCall is a tool call in a response.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// request is the canonical form of a model call, compared on replay.
type request struct {
	Messages []message `json:"messages"`
	Tools    []tool    `json:"tools,omitempty"`
}

type message struct {
	Role      string     `json:"role"`
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	CallID    string     `json:"callId,omitempty"`
	Result    string     `json:"result,omitempty"`
}

type tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Parameters  any    `json:"parameters,omitempty"`
}

// canonical renders a call the same way every time.
func canonical(msgs []llms.MessageContent, opts []llms.CallOption) (json.RawMessage, error) {
	var o llms.CallOptions
	for _, opt := range opts {
		opt(&o)
	}
	var r request
	for _, m := range msgs {
		cm := message{Role: string(m.Role)}
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				cm.Text += p.Text
			case llms.ToolCall:
				if p.FunctionCall != nil {
					cm.ToolCalls = append(cm.ToolCalls, ToolCall{ID: p.ID, Name: p.FunctionCall.Name, Arguments: p.FunctionCall.Arguments})
				}
			case llms.ToolCallResponse:
				cm.CallID, cm.Result = p.ToolCallID, p.Content
			}
		}
		r.Messages = append(r.Messages, cm)
	}
	for _, t := range o.Tools {
		if t.Function != nil {
			r.Tools = append(r.Tools, tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
		}
	}
	return json.Marshal(r)
}

// Writer appends exchanges to a cassette file, one line each. It is safe
// for concurrent use: each exchange is written whole.
type Writer struct {
	path string
	mu   sync.Mutex
}

// NewWriter returns a Writer that appends to the cassette at path,
// created on the first exchange.
func NewWriter(path string) *Writer { return &Writer{path: path} }

// Write appends the exchange in which the model named model, asked msgs
// with opts, answered resp. The request is written as Player compares
// it; resp as the caller gives it (the engine's, with secrets cut).
func (w *Writer) Write(model string, msgs []llms.MessageContent, opts []llms.CallOption, resp Response) error {
	req, err := canonical(msgs, opts)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	line, err := json.Marshal(Exchange{Model: model, Format: Format, Request: req, Response: resp})
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	f, err := os.OpenFile(w.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// ErrMismatch reports a request that no recorded exchange matches.
var ErrMismatch = errors.New("no recorded exchange matches the request")

// Player answers from a cassette: a request gets the response recorded
// for the same request, and any other request fails.
type Player struct {
	model     string
	path      string
	exchanges []Exchange
}

// Load reads a cassette to play the exchanges of the model named model
// (all of them when model is "").
func Load(path, model string) (*Player, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	p := &Player{model: model, path: path}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var x Exchange
		if err := json.Unmarshal(sc.Bytes(), &x); err != nil {
			return nil, fmt.Errorf("cassette %s:%d: %w", path, n, err)
		}
		if x.Format > Format {
			return nil, fmt.Errorf("cassette %s:%d: format %d, recorded by a newer agentctl (this one reads up to %d): upgrade agentctl or record the cassette again", path, n, x.Format, Format)
		}
		if model == "" || x.Model == model {
			p.exchanges = append(p.exchanges, x)
		}
	}
	return p, sc.Err()
}

// GenerateContent implements llms.Model.
func (p *Player) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	req, err := canonical(msgs, opts)
	if err != nil {
		return nil, err
	}
	old := withoutDescriptions(req)
	for _, x := range p.exchanges {
		want := req
		if x.Format < 2 {
			want = old // recorded without descriptions: compared without them
		}
		if bytes.Equal(compact(x.Request), compact(want)) {
			c := &llms.ContentChoice{Content: x.Response.Content, StopReason: "stop"}
			for _, tc := range x.Response.ToolCalls {
				c.ToolCalls = append(c.ToolCalls, llms.ToolCall{ID: tc.ID, Type: "function",
					FunctionCall: &llms.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
			}
			if err := stream.Text(ctx, opts, c.Content); err != nil {
				return nil, err
			}
			return &llms.ContentResponse{Choices: []*llms.ContentChoice{c}}, nil
		}
	}
	return nil, fmt.Errorf("replay %s: %w (%d recorded for this model)%s", p.path, ErrMismatch, len(p.exchanges), p.closest(req))
}

// closest describes where the request parts from the most similar
// recorded one, to say what changed.
func (p *Player) closest(req json.RawMessage) string {
	var got request
	if json.Unmarshal(req, &got) != nil {
		return ""
	}
	best, bestAt := "", -1
	for _, x := range p.exchanges {
		var rec request
		if json.Unmarshal(x.Request, &rec) != nil {
			continue
		}
		i := 0
		for i < len(got.Messages) && i < len(rec.Messages) && equal(got.Messages[i], rec.Messages[i]) {
			i++
		}
		if i > bestAt {
			bestAt = i
			switch {
			case i < len(got.Messages) && i < len(rec.Messages):
				g, _ := json.Marshal(got.Messages[i])
				r, _ := json.Marshal(rec.Messages[i])
				best = fmt.Sprintf("; closest recorded request differs at message %d: recorded %s, got %s", i, r, g)
			case len(got.Messages) != len(rec.Messages):
				best = fmt.Sprintf("; closest recorded request has %d messages, this one %d", len(rec.Messages), len(got.Messages))
			default:
				best = "; the closest recorded request offered other tools: " + toolsDiff(rec.Tools, got.Tools, x.Format)
			}
		}
	}
	return best
}

func equal(a, b message) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// Call implements llms.Model.
func (p *Player) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, p, prompt, opts...)
}

// withoutDescriptions returns req with its tools' descriptions removed,
// as format 1 recorded it.
func withoutDescriptions(req json.RawMessage) json.RawMessage {
	var r request
	if json.Unmarshal(req, &r) != nil {
		return req
	}
	for i := range r.Tools {
		r.Tools[i].Description = ""
	}
	b, err := json.Marshal(r)
	if err != nil {
		return req
	}
	return b
}

// toolsDiff says how the tools offered now differ from the recorded ones:
// the first tool missing, added, or with another description or input
// schema.
func toolsDiff(rec, got []tool, format int) string {
	find := func(ts []tool, name string) *tool {
		for i := range ts {
			if ts[i].Name == name {
				return &ts[i]
			}
		}
		return nil
	}
	for _, r := range rec {
		g := find(got, r.Name)
		switch {
		case g == nil:
			return fmt.Sprintf("tool %s was offered, now is not", r.Name)
		case format >= 2 && g.Description != r.Description:
			return fmt.Sprintf("tool %s has another description: recorded %q, now %q", r.Name, r.Description, g.Description)
		case !equalJSON(r.Parameters, g.Parameters):
			a, _ := json.Marshal(r.Parameters)
			b, _ := json.Marshal(g.Parameters)
			return fmt.Sprintf("tool %s has another input schema: recorded %s, now %s", r.Name, a, b)
		}
	}
	for _, g := range got {
		if find(rec, g.Name) == nil {
			return fmt.Sprintf("tool %s is offered, was not", g.Name)
		}
	}
	return "in another order"
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
