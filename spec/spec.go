// Package spec loads agentctl specs: YAML files declaring models, tools
// and agents. Load checks a spec completely, against the embedded JSON
// Schema and then for meaning (references, expressions, tool schemas),
// and reports every problem at once with its file:line:col.
package spec

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/notify"
	"github.com/agentctl/agentctl/spec/tmpl"
)

// Spec is a loaded and checked set of models, tools and agents.
type Spec struct {
	Models  map[string]*Model
	Tools   map[string]*Tool
	Agents  map[string]*Agent
	Policy  Policy
	Sources []Source // the files it was loaded from, as read
}

// Policy is who may decide, for every run of a spec.
type Policy struct {
	// Delegates are the OS users allowed to decide on behalf of someone
	// else (--as): chat-ops bots.
	Delegates []string
	// DelegatePos holds where each of Delegates is named.
	DelegatePos []Pos
	// Escalation is the ladder of the calls whose tool and agent set
	// none (Spec.Escalation).
	Escalation []EscalationStep
	// Timezone is the zone of rules' now and of freezes' local times;
	// nil: UTC.
	Timezone *time.Location
	// Rules (policy.rules) and Freezes (policy.freezes, checked first)
	// decide calls before their tools do: see Policy.Match.
	Rules, Freezes []*Rule
}

// Names are the user and group names the spec gives (groups without
// their group: prefix), each once: its tools' and agents' approvers,
// policy.delegates, policy rules' approvers, and those escalation
// steps add.
func (s *Spec) Names() []string {
	var out []string
	add := func(ns ...string) {
		for _, n := range ns {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	add(s.Policy.Delegates...)
	for _, k := range slices.Sorted(maps.Keys(s.Tools)) {
		add(s.Tools[k].Approvers.Users...)
		add(s.Tools[k].Approvers.Groups...)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Agents)) {
		add(s.Agents[k].Approvers.Users...)
		add(s.Agents[k].Approvers.Groups...)
	}
	for _, o := range s.OnCalls() {
		add(o.Fallback.Users...)
		add(o.Fallback.Groups...)
		add(slices.Sorted(maps.Values(o.Users))...)
	}
	for _, r := range s.Policy.Rules {
		add(r.Approvers.Users...)
		add(r.Approvers.Groups...)
	}
	for _, l := range s.Ladders() {
		for _, st := range l {
			add(st.AddApprovers.Users...)
			add(st.AddApprovers.Groups...)
		}
	}
	return out
}

// Approvers says who may decide a call: user names, and OS groups.
type Approvers struct {
	Users  []string
	Groups []string // without the group: prefix
	// OnCall are on-call schedules: whoever is on call when a call starts
	// waiting may decide it (resolved and recorded on the call).
	OnCall []*OnCall
}

// Empty reports whether anyone may decide.
func (a Approvers) Empty() bool { return len(a.Users) == 0 && len(a.Groups) == 0 && len(a.OnCall) == 0 }

// String is the list as written: alice, bob, group:sre.
func (a Approvers) String() string {
	var out []string
	out = append(out, a.Users...)
	for _, g := range a.Groups {
		out = append(out, "group:"+g)
	}
	for _, o := range a.OnCall {
		out = append(out, o.String())
	}
	return strings.Join(out, ", ")
}

// Source is one spec file's name and content.
type Source struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
	// Dir is the absolute directory the file was read from: relative
	// paths in it (a file tool's root) resolve against it. Empty: the
	// working directory.
	Dir string `json:"dir,omitempty"`
}

// Model providers.
const (
	ProviderScripted  = "scripted"  // replays declared turns, offline
	ProviderReplay    = "replay"    // answers from a recorded cassette
	ProviderOpenAI    = "openai"    // OpenAI or any OpenAI-compatible server
	ProviderAnthropic = "anthropic" // Anthropic's messages API
	ProviderGoogleAI  = "googleai"  // Gemini, on its OpenAI-compatible endpoint
	ProviderMistral   = "mistral"   // Mistral's chat API
	ProviderOllama    = "ollama"    // Ollama's OpenAI-compatible /v1
)

// Hosted reports whether a provider calls a model over the network: it
// needs model (the provider's model name) and takes baseURL and apiKey.
func Hosted(provider string) bool {
	switch provider {
	case ProviderOpenAI, ProviderAnthropic, ProviderGoogleAI, ProviderMistral, ProviderOllama:
		return true
	}
	return false
}

// Model declares a language model.
type Model struct {
	Name     string
	Pos      Pos
	Provider string
	Model    string       // provider's model name
	BaseURL  string       // endpoint; "" means the provider's own
	APIKey   *tmpl.String // over env; nil when not set
	Turns    []*Turn      // scripted provider only
	Cassette string       // replay provider only: absolute path

	Temperature *float64      // nil: the provider's default
	MaxTokens   int           // 0: the provider's default
	Timeout     time.Duration // per call attempt; 0: the default
	Retries     int           // on 429, 5xx and network errors; -1: the default
}

// Turn is one reply of a scripted model: either text or tool calls.
type Turn struct {
	Pos       Pos
	Text      *tmpl.String // over input and results
	ToolCalls []*ScriptedCall
}

// ScriptedCall is a tool call a scripted model makes. Strings in its
// arguments may hold placeholders over input and results, like turn text.
type ScriptedCall struct {
	Pos  Pos
	Tool string
	Args *tmpl.Value // nil: no arguments
}

// Tool declares a tool agents may call.
type Tool struct {
	Name        string
	Pos         Pos
	Description string
	Input       *Schema // the arguments; never nil
	Exec        *Exec   // the action: one of Exec, HTTP, File, Output
	HTTP        *HTTP
	File        *File
	MCP         *MCP         // imports a server's tools instead of being one
	Output      *tmpl.String // over input, resume, run and env

	// RequireApproval decides, once per call, whether it waits for a
	// human; over input and run.
	RequireApproval tmpl.Expr
	// ApprovalTimeout declines a call left pending this long; 0: never.
	ApprovalTimeout time.Duration
	Suspend         *Suspend // nil: the tool never suspends itself
	ResumeSchema    *Schema  // what resume data must satisfy; nil: anything
	Skip            *Skip    // nil: never skipped
	// Idempotent tools are run again when a crash interrupted a call;
	// others wait for agentctl retry or resolve.
	Idempotent bool
	// Approvers may decide the tool's calls; empty: the agent's, else
	// anyone.
	Approvers Approvers
	// Approvals is how many distinct approvers must approve (1 or more).
	Approvals int
	// SeparateDuties: whoever started the run may not approve.
	SeparateDuties bool
	// RequireReason: every decision on a call (approve, decline,
	// resume) gives a reason.
	RequireReason bool
	// Escalation is what happens while a call waits: reminders, more
	// approvers, a final decision; empty: the agent's.
	Escalation []EscalationStep
	// Preview is what runs before a call waits for a human, to show
	// what it would change (docs/previews.md); nil: none.
	Preview *Preview
}

// Kind names the kind of the tool's declaration, the toolkit that
// carries it out (a row of toolkits.Table): exec, http, file, output or
// mcp; "" when it declares no action.
func (t *Tool) Kind() string {
	switch {
	case t.Exec != nil:
		return "exec"
	case t.HTTP != nil:
		return "http"
	case t.File != nil:
		return "file"
	case t.Output != nil:
		return "output"
	case t.MCP != nil:
		return "mcp"
	}
	return ""
}

// ValidateInput checks arguments against the tool's input schema. The
// error is a *jsonschema.ValidationError when the arguments are invalid.
func (t *Tool) ValidateInput(args map[string]any) error { return t.Input.Validate(args) }

// Suspend declares when a tool pauses itself before its action runs,
// what it shows, and what that must look like.
type Suspend struct {
	Pos     Pos
	When    tmpl.Expr   // over input, resume and run
	Payload *tmpl.Value // over input, resume and run
	Schema  *Schema     // what the payload must satisfy; nil: anything
}

// Skip ends a call without running its action.
type Skip struct {
	When   tmpl.Expr    // over input, resume and run
	Output *tmpl.String // the call's result
}

// Exec runs a command without a shell.
type Exec struct {
	Command []*tmpl.String // argv, each element rendered on its own
	Dir     string
	Env     map[string]*tmpl.String // added to the environment
	// InheritEnv names variables of agentctl's environment the command
	// gets besides the minimal one (toolkits.ChildEnv).
	InheritEnv []string
	Timeout    time.Duration // zero means the default
	MaxOutput  int64         // bytes kept of stdout and of stderr; zero means the default
	// Shell runs Command[0], a fixed script, with sh -c; arguments reach
	// it only through Env.
	Shell bool
}

// HTTP sends one request to a host fixed in the spec.
type HTTP struct {
	Method      string
	URL         *tmpl.String // placeholders only after scheme://host, each value path-escaped
	Origin      string       // scheme://host[:port], as written
	Query       map[string]*tmpl.String
	Headers     map[string]*tmpl.String
	Body        *tmpl.Value // nil: no body
	Timeout     time.Duration
	MaxResponse int64
}

// MCP declares an MCP server whose tools agents may call, as
// SERVER.TOOL.
type MCP struct {
	Command             []string                // stdio: argv of the server
	URL                 string                  // or streamable HTTP
	Env                 map[string]*tmpl.String // over env
	InheritEnv          []string                // passed from agentctl's environment besides the minimal one
	RequireApproval     tmpl.Expr               // over tool and input
	Tools               map[string]tmpl.Expr    // per tool, overriding RequireApproval
	AutoApproveReadOnly bool
}

// File reads, writes or lists files inside a root directory.
type File struct {
	Root string // absolute
	// RootAsWritten is the root as the spec wrote it (relative to the
	// spec file's directory unless absolute), for pictures of the spec
	// that must not depend on where it lies (agentctl graph).
	RootAsWritten string
	Op            string // read, write or list
	Path          *tmpl.String
	Content       *tmpl.String // for write
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
	ApprovalTimeout     time.Duration // for the agent's calls whose tool sets none
	AutoResume          bool          // send extracts resume data from the user's message
	// Agents are its sub-agents, offered to its model as tools named after
	// them; SubPos holds where each is named.
	Agents []string
	SubPos []Pos
	// MaxDepth bounds how deep delegations nest below a run of the agent.
	MaxDepth int
	// Approvers may decide the agent's calls whose tool names none.
	Approvers Approvers
	// SeparateDuties: whoever started the run may not approve its calls.
	SeparateDuties bool
	// Notify are the targets notified of the agent's runs, and of its
	// sub-agents' runs that have none of their own.
	Notify []notify.Target
	// Escalation is the ladder of the agent's calls whose tool sets
	// none; empty: the policy's.
	Escalation []EscalationStep
}

// ResumeTool is the tool offered to a model to extract resume data from a
// user's message (agentctl send with autoResume). Scripted models call it
// by this name.
const ResumeTool = "agentctl_resume"

// DefaultMaxDepth bounds delegation depth when an agent sets no maxDepth.
const DefaultMaxDepth = 5

// DefaultMaxSteps bounds the model turns of a run when an agent sets no maxSteps.
const DefaultMaxSteps = 10

// Variables that each kind of placeholder may use.
var (
	toolVars     = tmpl.Vars{"input": map[string]any{}, "resume": map[string]any{}, "run": map[string]any{}}
	mcpVars      = tmpl.Vars{"tool": "", "input": map[string]any{}}
	envVars      = tmpl.Vars{"env": map[string]string{}}
	actionVars   = tmpl.Vars{"input": map[string]any{}, "resume": map[string]any{}, "run": map[string]any{}, "env": map[string]string{}}
	approvalVars = tmpl.Vars{"input": map[string]any{}, "run": map[string]any{}}
	turnVars     = tmpl.Vars{"input": "", "results": []any{}}
	modelVars    = tmpl.Vars{"env": map[string]string{}}
)
