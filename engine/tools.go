package engine

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/toolkits"
)

// Tools a declaration provides several of are DECL.TOOL in agentctl and
// DECL__TOOL to models, whose function names may not hold dots.
const modelSep = "__"

// kitNode is one tool declaration compiled: its toolkit's Kit, whose
// tools are listed once, when first needed (an MCP server starts then).
type kitNode struct {
	spec *spec.Tool
	kit  toolkits.Kit
	// preview runs the declaration's preview (docs/previews.md); nil:
	// none.
	preview toolkits.Tool

	mu    sync.Mutex
	tools []*toolNode
}

// toolNode is one tool a model may call, with the declaration it comes
// from (its approvers, timeouts, suspension and idempotence).
type toolNode struct {
	decl *spec.Tool
	tool toolkits.Tool
	def  model.ToolDef // what the model is offered, secrets cut (offered), made once
	// preview runs the declaration's preview; nil: none.
	preview toolkits.Tool
}

// modelName is the name a model calls the tool by.
func (t *toolNode) modelName() string { return strings.Replace(t.tool.Name(), ".", modelSep, 1) }

// list returns the declaration's tools, listing them on first use.
func (k *kitNode) list(ctx context.Context) ([]*toolNode, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.tools != nil {
		return k.tools, nil
	}
	tools, err := k.kit.Tools(ctx)
	if err != nil {
		return nil, err
	}
	nodes := make([]*toolNode, len(tools))
	for i, t := range tools {
		n := &toolNode{decl: k.spec, tool: t, preview: k.preview}
		n.def = offered(n.modelName(), t)
		nodes[i] = n
	}
	k.tools = nodes
	return nodes, nil
}

// provides reports whether the declaration may provide a tool of this
// name (agentctl's or the model's), without listing its tools.
func (k *kitNode) provides(name string) bool {
	decl := k.spec.Name
	return name == decl || strings.HasPrefix(name, decl+".") || strings.HasPrefix(name, decl+modelSep)
}

// tool finds the agent's tool a name designates, as agentctl or a model
// names it; nil when the agent has none of that name.
func (a *agentNode) tool(ctx context.Context, name string) (*toolNode, error) {
	for _, k := range a.kits {
		if !k.provides(name) {
			continue
		}
		tools, err := k.list(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range tools {
			if t.tool.Name() == name || t.modelName() == name {
				return t, nil
			}
		}
	}
	return nil, nil
}

// decl returns the declaration of an agent's tool by the tool's name,
// without listing any server's tools; nil when it has none.
func (a *agentNode) decl(tool string) *spec.Tool {
	for _, k := range a.kits {
		if k.spec.Name == toolkits.Decl(tool) {
			return k.spec
		}
	}
	return nil
}

// plain reports whether a call of the agent's tool runs with nothing
// evaluated first: a tool, not a sub-agent, whose declaration has no
// suspend or skip condition and no preview. Its start may then be committed before
// the runner reaches it (by a decision, or a worker's claim).
func (a *agentNode) plain(tool string) bool {
	if _, sub := a.subs[tool]; sub {
		return false
	}
	t := a.decl(tool)
	// A preview's digest is checked before the call starts.
	return t != nil && t.Suspend == nil && t.Skip == nil && t.Preview == nil
}

// offered is what a model is told of a tool: its name, description and
// input schema, with the values of the tool's secrets cut out. A server
// may put what it was given in its env into what it lists (an MCP
// server's descriptions): the model, and a cassette, never get them.
func offered(name string, t toolkits.Tool) model.ToolDef {
	def := model.ToolDef{Name: name, Description: t.Description(), Parameters: t.Input().Doc}
	secrets := t.Secrets()
	if len(secrets) == 0 {
		return def
	}
	env := toolkits.EnvOf(secrets)
	def.Description = redact(def.Description, secrets, env)
	doc, err := json.Marshal(def.Parameters)
	if err != nil {
		return def
	}
	if cut := redact(string(doc), secrets, env); cut != string(doc) {
		var params map[string]any
		if json.Unmarshal([]byte(cut), &params) == nil {
			def.Parameters = params
		}
	}
	return def
}

// toolDefs is what the agent's model is offered: its tools (a server's
// listed on first need), then its sub-agents.
func (a *agentNode) toolDefs(ctx context.Context) ([]model.ToolDef, error) {
	var defs []model.ToolDef
	for _, k := range a.kits {
		tools, err := k.list(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range tools {
			defs = append(defs, t.def)
		}
	}
	for _, name := range a.spec.Agents {
		defs = append(defs, model.ToolDef{Name: name, Description: a.subs[name].spec.Description, Parameters: taskSchema()})
	}
	return defs, nil
}
