package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/toolkits"
	"github.com/agentctl/agentctl/toolkits/exec"
	"github.com/agentctl/agentctl/toolkits/file"
	toolhttp "github.com/agentctl/agentctl/toolkits/http"
	toolmcp "github.com/agentctl/agentctl/toolkits/mcp"
	"github.com/agentctl/agentctl/toolkits/output"
)

// Graph is a spec compiled for running: each agent bound to its model and
// its tools, each tool to its action and approval gate. A Graph is
// immutable once compiled and safe for concurrent use.
type Graph struct {
	spec     *spec.Spec
	snapshot []byte // the spec's sources, as stored with each run
	hash     string // sha256 of snapshot
	agents   map[string]*agentNode
	models   map[string]*modelNode
}

type agentNode struct {
	spec  *spec.Agent
	model *modelNode
	tools map[string]*toolNode // by spec name; an MCP server stands for its tools
	mcps  []*toolmcp.Server
	subs  map[string]*agentNode // sub-agents, offered to the model as tools
	defs  []llms.Tool           // tools then sub-agents, as offered to the model
}

// taskSchema is the input of a delegation to a sub-agent.
func taskSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"task": map[string]any{"type": "string", "description": "What the sub-agent is to do, in full: it sees nothing else."},
		},
		"required": []any{"task"},
	}
}

type toolNode struct {
	spec   *spec.Tool
	action toolkits.Action
	mcp    *toolmcp.Server // instead of action: a server's tools
	// secrets are the env names its action reads: their values are cut
	// out of its results before anything is stored.
	secrets []string
}

// modelNode builds its model on first use: a run that only approves a
// call on a scripted model never builds an API client.
type modelNode struct {
	spec  *spec.Model
	build func() (llms.Model, error)
}

// checkModels builds the models a run of a would use (override replacing
// a's own), so that configuration errors, such as a missing API key, stop
// a run before it starts. Building a model touches no network.
func (g *Graph) checkModels(a *agentNode, override string) error {
	seen := map[*agentNode]bool{}
	var walk func(a *agentNode, n *modelNode) error
	walk = func(a *agentNode, n *modelNode) error {
		if seen[a] {
			return nil
		}
		seen[a] = true
		if _, err := n.build(); err != nil {
			return usagef("agent %s: %v", a.spec.Name, err)
		}
		for _, sub := range a.subs {
			if err := walk(sub, sub.model); err != nil {
				return err
			}
		}
		return nil
	}
	n := a.model
	if m, ok := g.models[override]; ok {
		n = m
	}
	return walk(a, n)
}

// Compile binds a loaded spec to model providers (nil means
// model.Default()) and toolkits.
func Compile(s *spec.Spec, models model.Registry) (*Graph, error) {
	if models == nil {
		models = model.Default()
	}
	snap, err := json.Marshal(s.Sources)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	sum := sha256.Sum256(snap)
	g := &Graph{spec: s, snapshot: snap, hash: hex.EncodeToString(sum[:]), agents: map[string]*agentNode{}}
	mnodes := map[string]*modelNode{}
	g.models = mnodes
	for name, m := range s.Models {
		if _, ok := models[m.Provider]; !ok {
			return nil, fmt.Errorf("%s: model %s: provider %q is not available", m.Pos, name, m.Provider)
		}
		mnodes[name] = &modelNode{spec: m, build: sync.OnceValues(func() (llms.Model, error) {
			return models.New(context.Background(), m)
		})}
	}
	tnodes := map[string]*toolNode{}
	for name, t := range s.Tools {
		n := &toolNode{spec: t}
		switch {
		case t.Exec != nil:
			n.action = exec.New(t.Exec)
			for _, c := range t.Exec.Command {
				n.secrets = append(n.secrets, c.EnvNames()...)
			}
			for _, v := range t.Exec.Env {
				n.secrets = append(n.secrets, v.EnvNames()...)
			}
		case t.HTTP != nil:
			a, err := toolhttp.New(t.HTTP)
			if err != nil {
				return nil, fmt.Errorf("%s: tool %s: %w", t.Pos, name, err)
			}
			n.action = a
			n.secrets = append(append(n.secrets, t.HTTP.URL.EnvNames()...), t.HTTP.Body.EnvNames()...)
			for _, v := range t.HTTP.Query {
				n.secrets = append(n.secrets, v.EnvNames()...)
			}
			for _, v := range t.HTTP.Headers {
				n.secrets = append(n.secrets, v.EnvNames()...)
			}
		case t.File != nil:
			n.action = file.New(t.File)
			n.secrets = append(append(n.secrets, t.File.Path.EnvNames()...), t.File.Content.EnvNames()...)
		case t.Output != nil:
			n.action = output.New(t.Output)
			n.secrets = t.Output.EnvNames()
		case t.MCP != nil:
			n.mcp = toolmcp.New(name, t.MCP)
		default:
			return nil, fmt.Errorf("%s: tool %s has no action", t.Pos, name)
		}
		tnodes[name] = n
	}
	for name, a := range s.Agents {
		n := &agentNode{spec: a, model: mnodes[a.Model], tools: map[string]*toolNode{}}
		for _, tn := range a.Tools {
			t := tnodes[tn]
			n.tools[tn] = t
			if t.mcp != nil {
				n.mcps = append(n.mcps, t.mcp) // its tools are listed when first needed
				continue
			}
			n.defs = append(n.defs, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
				Name: tn, Description: t.spec.Description, Parameters: t.spec.Input.Doc,
			}})
		}
		g.agents[name] = n
	}
	for _, n := range g.agents {
		n.subs = map[string]*agentNode{}
		for _, sub := range n.spec.Agents {
			sn := g.agents[sub]
			n.subs[sub] = sn
			n.defs = append(n.defs, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
				Name: sub, Description: sn.spec.Description, Parameters: taskSchema(),
			}})
		}
	}
	return g, nil
}

// Close stops the MCP servers the graph started.
func (g *Graph) Close() error {
	var errs []error
	seen := map[*toolmcp.Server]bool{}
	for _, a := range g.agents {
		for _, s := range a.mcps {
			if !seen[s] {
				seen[s] = true
				errs = append(errs, s.Close())
			}
		}
	}
	return errors.Join(errs...)
}

// modelNames returns the names of the graph's models, sorted.
func (g *Graph) modelNames() []string {
	names := make([]string, 0, len(g.models))
	for n := range g.models {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Agents returns the names of the graph's agents, sorted.
func (g *Graph) Agents() []string {
	names := make([]string, 0, len(g.agents))
	for n := range g.agents {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LoadSnapshot loads and compiles a spec snapshot as stored with a run.
func LoadSnapshot(snap []byte, models model.Registry) (*Graph, error) {
	var srcs []spec.Source
	if err := json.Unmarshal(snap, &srcs); err != nil {
		return nil, fmt.Errorf("spec snapshot: %w", err)
	}
	s, err := spec.Reload(srcs)
	if err != nil {
		return nil, fmt.Errorf("spec snapshot: %w", err)
	}
	return Compile(s, models)
}
