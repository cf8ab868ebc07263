package engine

import (
	"context"
	"errors"

	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/toolkits"
	secrets "github.com/agentctl/agentctl/toolkits/redact"
)

// secretNames names the environment variables whose values a graph hands
// to its models and tools: every model's key (model.KeyVars) and every
// variable a tool declaration reads (its Describe().Env: an exec's env,
// an http header, an MCP server's env). No model output and no
// notification carries their values.
func secretNames(models map[string]*modelNode, kits map[string]*kitNode) []string {
	var names []string
	for _, m := range models {
		names = append(names, model.KeyVars(m.spec)...)
	}
	for _, k := range kits {
		names = append(names, k.kit.Describe().Env...)
		if k.preview != nil {
			names = append(names, k.preview.Secrets()...)
		}
	}
	return toolkits.EnvNames(names)
}

// cutter returns the redactor of the graph's secrets, their values as
// the environment holds them now.
func (g *Graph) cutter() *secrets.Redactor {
	return secrets.New(g.secrets, toolkits.EnvOf(g.secrets))
}

// askable returns the model of node as a run asks it: built, its every
// output cut (cutModel), and then, with run --record, recorded. A build
// error has the secrets cut too.
func (rn *runner) askable(node *modelNode) (model.Model, error) {
	cut := rn.g.cutter()
	m, err := node.build()
	if err != nil {
		return nil, cutError(cut, err)
	}
	var out model.Model = cutModel{m: m, cut: cut}
	if rn.e.recorder != nil {
		out = rn.e.recorder.Wrap(out, node.spec.Name)
	}
	return out, nil
}

// cutModel is the one place every output of a model passes through
// before the engine stores, streams, traces, records or shows any of it:
// its text, as it streams too, each tool call's id, name and arguments,
// and its errors, with the values of the graph's secrets cut in every
// encoding package redact knows. The arguments a tool gets are the cut
// ones: a model that writes a secret into a call has the call made, and
// kept, with [env.NAME] in its place. A model's reasoning is not kept
// (model.Response has none).
type cutModel struct {
	m   model.Model
	cut *secrets.Redactor
}

// Generate implements model.Model. Streamed text is held back while its
// tail could still be the beginning of a secret (a key split across two
// chunks), and shown cut once it cannot; the rest, when the answer ends.
func (c cutModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	ask := *req
	var st *secrets.Stream
	if req.OnText != nil {
		st = c.cut.Stream()
		ask.OnText = func(chunk string) {
			if s := st.Next(chunk); s != "" {
				req.OnText(s)
			}
		}
	}
	resp, err := c.m.Generate(ctx, &ask)
	if err != nil {
		return nil, cutError(c.cut, err)
	}
	if st != nil {
		if s := st.End(); s != "" {
			req.OnText(s)
		}
	}
	out := *resp
	out.Text = c.cut.Cut(resp.Text)
	out.ToolCalls = nil
	for _, tc := range resp.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, model.ToolCall{ID: c.cut.Cut(tc.ID), Name: c.cut.Cut(tc.Name), Args: c.cut.Cut(tc.Args)})
	}
	return &out, nil
}

// cutError returns err with the secrets cut from its message: a provider
// may echo the key it was given (401: "Incorrect API key provided: ...").
func cutError(cut *secrets.Redactor, err error) error {
	return &modelError{msg: cut.Cut(err.Error()), err: err}
}

// modelError is a model's failure with the secrets cut from its message.
// It answers errors.Is as the failure does (model.Final), and hands the
// failure itself to no one: its message may hold a secret.
type modelError struct {
	msg string
	err error
}

func (e *modelError) Error() string { return e.msg }

// Is reports whether the failure is target.
func (e *modelError) Is(target error) bool { return errors.Is(e.err, target) }
