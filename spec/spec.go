// Package spec loads agentctl specs: YAML files declaring models, tools
// and agents. Load checks a spec completely, against the embedded JSON
// Schema and then for meaning (references, expressions, tool schemas),
// and reports every problem at once with its file:line:col.
package spec

import (
	"fmt"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentctl/agentctl/spec/tmpl"
)

// Spec is a loaded and checked set of models, tools and agents.
type Spec struct {
	Models  map[string]*Model
	Tools   map[string]*Tool
	Agents  map[string]*Agent
	Sources []Source // the files it was loaded from, as read
}

// Source is one spec file's name and content.
type Source struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

// Model providers.
const (
	ProviderScripted = "scripted"
	ProviderOpenAI   = "openai"
)

// Model declares a language model.
type Model struct {
	Name     string
	Pos      Pos
	Provider string
	Model    string       // provider's model name
	BaseURL  string       // endpoint, for openai-compatible servers
	APIKey   *tmpl.String // over env; nil when not set
	Turns    []*Turn      // scripted provider only
}

// Turn is one reply of a scripted model: either text or tool calls.
type Turn struct {
	Pos       Pos
	Text      *tmpl.String // over input and results
	ToolCalls []*ScriptedCall
}

// ScriptedCall is a tool call a scripted model makes.
type ScriptedCall struct {
	Pos  Pos
	Tool string
	Args map[string]any
}

// Tool declares a tool agents may call.
type Tool struct {
	Name            string
	Pos             Pos
	Description     string
	Input           map[string]any // JSON Schema of the arguments, as written
	Exec            *Exec          // the action: Exec or Output
	Output          *tmpl.String   // over input
	RequireApproval bool

	schema func() (*jsonschema.Schema, error) // Input, compiled (on first use after Reload)
}

// ValidateInput checks arguments against the tool's input schema. The
// error is a *jsonschema.ValidationError when the arguments are invalid.
func (t *Tool) ValidateInput(args map[string]any) error {
	if t.schema == nil {
		return nil
	}
	sch, err := t.schema()
	if err != nil {
		return fmt.Errorf("tool %s: input schema: %w", t.Name, err)
	}
	return sch.Validate(args)
}

// Exec runs a command without a shell.
type Exec struct {
	Command []*tmpl.String // argv, each element rendered on its own
	Dir     string
	Timeout time.Duration // zero means the default
}

// Agent declares an agent.
type Agent struct {
	Name                string
	Pos                 Pos
	Description         string
	Model               string
	Instructions        string
	Tools               []string
	MaxSteps            int
	RequireToolApproval bool
}

// DefaultMaxSteps bounds the model turns of a run when an agent sets no maxSteps.
const DefaultMaxSteps = 10

// Variables that each kind of placeholder may use.
var (
	toolVars  = tmpl.Vars{"input": map[string]any{}}
	turnVars  = tmpl.Vars{"input": "", "results": []any{}}
	modelVars = tmpl.Vars{"env": map[string]string{}}
)
