// Package toolkits defines the one interface every tool implementation
// meets. Each toolkit (exec, output, ...) lives in its own sub-package and
// builds an Action from its part of a tool's spec.
package toolkits

import (
	"context"
	"os"
	"strings"
)

// Call is one validated tool call to carry out.
type Call struct {
	RunID  string
	CallID string
	Tool   string
	Input  map[string]any // the arguments, valid against the tool's input schema
	Resume map[string]any // the resume data it was given; nil if none
	Run    map[string]any // id, agent and step of the run
	// Env is the process environment, read by ${{ env.NAME }} at
	// execution only: what a call stores never holds its values.
	Env map[string]string
}

// Vars returns the variables a tool's placeholders see: input, resume,
// run and env.
func (c Call) Vars() map[string]any {
	return map[string]any{"input": c.Input, "resume": c.Resume, "run": c.Run, "env": c.Env}
}

// IdempotencyKey identifies the call across retries: runId:callId.
func (c Call) IdempotencyKey() string { return c.RunID + ":" + c.CallID }

// Result is what a tool call produced: the content the model is told and
// whether the tool reports failure (a non-zero exit, say). A failed result
// is not a run failure: the model sees it and goes on.
type Result struct {
	Content string
	Failed  bool
}

// Action carries out calls of one tool. An error is reported to the model
// as a failed result.
type Action interface {
	Do(ctx context.Context, c Call) (Result, error)
}

// Environ returns the process environment as a map, for ${{ env.NAME }}.
func Environ() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}
