package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/toolkits"
	"github.com/agentctl/agentctl/toolkits/builtin"
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
	// plain are the tools of its agents whose calls a worker's claim may
	// start (store.Plain).
	plain []store.Plain
	// upload is the upload of a spec sent with a run (untrusted), nil
	// for a configured one.
	upload *Upload
	// secrets name the environment variables whose values it hands to its
	// models and tools (secretNames).
	secrets []string
}

type agentNode struct {
	spec  *spec.Agent
	model *modelNode
	kits  []*kitNode            // its tool declarations, in spec order
	subs  map[string]*agentNode // sub-agents, offered to the model as tools
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

// modelNode builds its model on first use: a run that only approves a
// call on a scripted model never builds an API client.
type modelNode struct {
	spec  *spec.Model
	build func() (model.Model, error)
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
// model.Default()) and toolkits (nil means builtin.Table()).
func Compile(s *spec.Spec, models model.Registry, kits toolkits.Table) (*Graph, error) {
	return compileAs(s, models, kits, nil)
}

// compileAs is Compile of a spec uploaded as up, or configured (up nil).
func compileAs(s *spec.Spec, models model.Registry, kits toolkits.Table, up *Upload) (*Graph, error) {
	if models == nil {
		models = model.Default()
	}
	if kits == nil {
		kits = builtin.Table()
	}
	snap, err := encodeSnapshot(s.Sources, up)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	sum := sha256.Sum256(snap)
	g := &Graph{spec: s, snapshot: snap, hash: hex.EncodeToString(sum[:]), agents: map[string]*agentNode{}, upload: up}
	mnodes := map[string]*modelNode{}
	g.models = mnodes
	for name, m := range s.Models {
		if _, ok := models[m.Provider]; !ok {
			return nil, fmt.Errorf("%s: model %s: provider %q is not available", m.Pos, name, m.Provider)
		}
		mnodes[name] = &modelNode{spec: m, build: sync.OnceValues(func() (model.Model, error) {
			return models.New(context.Background(), m)
		})}
	}
	knodes := map[string]*kitNode{}
	for name, t := range s.Tools {
		build, ok := kits[t.Kind()]
		if !ok {
			return nil, fmt.Errorf("%s: tool %s: no toolkit for %q", t.Pos, name, t.Kind())
		}
		kit, err := build(t)
		if err != nil {
			return nil, err
		}
		pv, err := previewOf(kits, t)
		if err != nil {
			return nil, err
		}
		knodes[name] = &kitNode{spec: t, kit: kit, preview: pv}
	}
	g.secrets = toolkits.EnvNames(append(secretNames(mnodes, knodes), onCallSecrets(s)...))
	for name, a := range s.Agents {
		n := &agentNode{spec: a, model: mnodes[a.Model]}
		for _, tn := range a.Tools {
			n.kits = append(n.kits, knodes[tn])
		}
		g.agents[name] = n
	}
	for _, n := range g.agents {
		n.subs = map[string]*agentNode{}
		for _, sub := range n.spec.Agents {
			n.subs[sub] = g.agents[sub]
		}
	}
	for name, n := range g.agents {
		for _, k := range n.kits {
			if n.plain(k.spec.Name) {
				g.plain = append(g.plain, store.Plain{SpecHash: g.hash, Agent: name, Decl: k.spec.Name})
			}
		}
	}
	return g, nil
}

// Close stops what the graph's toolkits started (MCP servers).
func (g *Graph) Close() error {
	var errs []error
	seen := map[*kitNode]bool{}
	for _, a := range g.agents {
		for _, k := range a.kits {
			if !seen[k] {
				seen[k] = true
				errs = append(errs, k.kit.Close())
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
func LoadSnapshot(snap []byte, models model.Registry, kits toolkits.Table) (*Graph, error) {
	srcs, up, err := decodeSnapshot(snap)
	if err != nil {
		return nil, err
	}
	s, err := spec.Reload(srcs)
	if err != nil {
		return nil, fmt.Errorf("spec snapshot: %w", err)
	}
	return compileAs(s, models, kits, up)
}

// Spec returns the spec the graph was compiled from. It is shared: read
// only.
func (g *Graph) Spec() *spec.Spec { return g.spec }
