// Package toolkits defines the one contract between the engine and every
// tool implementation. Each toolkit (exec, http, file, output, mcp) lives
// in its own sub-package and turns its part of a tool declaration into a
// Kit: the tools that declaration provides. A Table maps each kind of
// declaration to the toolkit that builds it; the engine compiles specs
// with one (package builtin has the default).
package toolkits

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/spec"
)

// Call is one validated tool call to carry out.
type Call struct {
	RunID  string
	CallID string
	Tool   string
	Input  map[string]any // the arguments, valid against the tool's input schema
	Resume map[string]any // the resume data it was given; nil if none
	Run    map[string]any // id, agent and step of the run
	// Env holds the environment variables the tool's templates read
	// (its Secrets), read by ${{ env.NAME }} at execution only: what a
	// call stores never holds their values.
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
	// Object reports that Content is a JSON object, the toolkit's
	// documented result shape (exec, http): stored, shown and reported
	// in events as an object. Otherwise Content is text.
	Object bool
}

// ObjectResult returns the result whose content is v, a struct or map,
// as compact JSON: an object in views and events, that text for the
// model.
func ObjectResult(v any, failed bool) (Result, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Result{}, fmt.Errorf("encoding the result: %w", err)
	}
	if len(b) == 0 || b[0] != '{' {
		return Result{}, fmt.Errorf("encoding the result: %s is not a JSON object", b)
	}
	return Result{Content: string(b), Failed: failed, Object: true}, nil
}

// Action carries out calls of one tool. An error is reported to the model
// as a failed result.
type Action interface {
	Do(ctx context.Context, c Call) (Result, error)
}

// Tool is one tool a model may call, whatever carries it out. The engine
// validates a call's arguments against Input, asks Approval, records the
// call as executing, runs Do, and cuts the values of Secrets out of the
// result before anything is stored: the same path for every tool.
type Tool interface {
	Action
	// Name is agentctl's name for the tool: its declaration's name, or
	// DECL.TOOL for one of several tools a declaration provides (an MCP
	// server's). Declaration names hold no dot.
	Name() string
	// Description tells the model what the tool does.
	Description() string
	// Input is the JSON Schema its arguments must satisfy.
	Input() *spec.Schema
	// Approval evaluates the tool's own approval condition for a call
	// with these arguments (valid against Input) in a run (id, agent,
	// step). The engine adds the agent's and the run's conditions.
	Approval(input, run map[string]any) Verdict
	// Secrets names the environment variables whose values the tool
	// handles: they never reach the database, whatever the tool echoes.
	Secrets() []string
}

// Verdict is a tool's own approval condition, evaluated for one call.
type Verdict struct {
	// Need reports that a human must approve the call.
	Need bool
	// Reason says what requires approval, or why none is needed when
	// that is worth recording ("" otherwise): one of the reasons below,
	// which the engine keeps with the call.
	Reason string
	// Detail completes the reason: the condition's source, the tool.
	Detail string
	// Err is why the condition could not be evaluated; Need is then
	// true: a gate fails closed.
	Err error
}

// Reasons a tool gives in a Verdict (store.ReasonKind).
const (
	ReasonTool      = "tool"      // requireApproval is true
	ReasonCondition = "condition" // the requireApproval expression (Detail) held
	ReasonServer    = "server"    // the server's requireApproval (Detail) held
	ReasonFailed    = "failed"    // the condition could not be evaluated
	ReasonFalse     = "false"     // the condition (Detail) was false
	ReasonReadOnly  = "read-only" // the server marks the tool (Detail) read-only
)

// Kit is what one tool declaration provides: one tool, or the tools of a
// server, listed when first needed.
type Kit interface {
	// Tools returns the declaration's tools, starting what they need
	// (a server) on first call.
	Tools(ctx context.Context) ([]Tool, error)
	// Describe says what the declaration does, for agentctl graph.
	Describe() Description
	// Close stops what Tools started.
	Close() error
}

// Description is what agentctl graph shows of a declaration.
type Description struct {
	// Action names what it does: "exec CMD ARGS", "GET URL", ...
	Action string
	// Gate lists the declaration's own approval conditions ("always",
	// "when EXPR", ...); empty when its calls need none of their own.
	Gate []string
	// Env names the environment variables the declaration reads, sorted:
	// all its calls may see (EnvOf), known when the spec is compiled.
	Env []string
}

// EnvNames returns names sorted, without repeats.
func EnvNames(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
}

// Builder builds the Kit of one tool declaration.
type Builder func(t *spec.Tool) (Kit, error)

// Table maps a kind of declaration (spec.Tool.Kind) to the toolkit that
// builds it.
type Table map[string]Builder

// Decl returns the name of the declaration that provides a tool: the part
// of its name before the first dot.
func Decl(tool string) string {
	name, _, _ := strings.Cut(tool, ".")
	return name
}

// EnvOf returns the named environment variables that are set: all that a
// declaration's ${{ env.NAME }} may read. Expressions name variables only
// literally (spec/tmpl refuses env[...] and env as a whole) and get only
// the names their declaration reads, so none can reach any other.
func EnvOf(names []string) map[string]string {
	env := make(map[string]string, len(names))
	for _, n := range names {
		if v, ok := os.LookupEnv(n); ok {
			env[n] = v
		}
	}
	return env
}
