// Package output is the side-effect-free toolkit: the result is a text
// template rendered over the call's arguments. It serves demos and tests.
package output

import (
	"context"

	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/spec/tmpl"
	"github.com/agentctl/agentctl/toolkits"
)

// Action renders a fixed text.
type Action struct{ text *tmpl.String }

// New returns an Action rendering text, whose placeholders use input.
func New(text *tmpl.String) *Action { return &Action{text: text} }

// Do implements toolkits.Action.
func (a *Action) Do(_ context.Context, c toolkits.Call) (toolkits.Result, error) {
	s, err := a.text.Render(tmpl.Env(c.Vars()))
	if err != nil {
		return toolkits.Result{}, err
	}
	return toolkits.Result{Content: s}, nil
}

// Preview implements toolkits.Previewer: the text the call returns.
func (a *Action) Preview(c toolkits.Call) (toolkits.Preview, error) {
	s, err := a.text.Render(tmpl.Env(c.Vars()))
	if err != nil {
		return toolkits.Preview{}, err
	}
	return toolkits.Preview{Text: s}, nil
}

// Kit builds the tool of an output declaration: the environment
// variables its text reads are its secrets.
func Kit(t *spec.Tool) (toolkits.Kit, error) {
	return &toolkits.Declared{Spec: t, Act: New(t.Output), Summary: "output", Vars: t.Output.EnvNames()}, nil
}
