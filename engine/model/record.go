package model

import (
	"context"

	"github.com/agentctl/agentctl/engine/model/cassette"
)

// Recorder appends the exchanges of the models it wraps to a cassette
// (run --record), which Registry.Replaying answers from. It is safe for
// concurrent use.
type Recorder struct{ w *cassette.Writer }

// NewRecorder returns a Recorder appending to the cassette at path.
func NewRecorder(path string) *Recorder { return &Recorder{w: cassette.NewWriter(path)} }

// Wrap returns m, the model named name, with each exchange it answers
// recorded: the request as replay compares it, and the answer as m gives
// it. The engine wraps a model once it cuts the run's secrets out of its
// answers, so a cassette holds what the run kept.
func (r *Recorder) Wrap(m Model, name string) Model { return recorded{m: m, name: name, w: r.w} }

type recorded struct {
	m    Model
	name string
	w    *cassette.Writer
}

// Generate implements Model.
func (r recorded) Generate(ctx context.Context, req *Request) (*Response, error) {
	resp, err := r.m.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	x := cassette.Response{Content: resp.Text}
	for _, tc := range resp.ToolCalls {
		x.ToolCalls = append(x.ToolCalls, cassette.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Args})
	}
	if err := r.w.Write(r.name, messages(req.Messages), callOptions(req), x); err != nil {
		return nil, err
	}
	return resp, nil
}
