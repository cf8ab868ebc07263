package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/toolkits"
)

// Graph picture formats.
const (
	FormatText    = "text"
	FormatMermaid = "mermaid"
	FormatDot     = "dot"
)

// gateNote describes a tool declaration's approval gate in an agent, or
// "".
func gateNote(a *agentNode, k *kitNode) string {
	why := k.kit.Describe().Gate
	if a.spec.RequireToolApproval {
		why = append(why, "every call (agent requireToolApproval)")
	}
	if len(why) == 0 {
		return ""
	}
	note := "approval: " + strings.Join(why, " or ")
	t := k.spec
	if d := t.ApprovalTimeout; d > 0 {
		note += fmt.Sprintf(", expires after %s", d)
	} else if d := a.spec.ApprovalTimeout; d > 0 {
		note += fmt.Sprintf(", expires after %s", d)
	}
	p := policyOf(a, t.Name)
	if !p.approvers.Empty() {
		note += "; approvers: " + p.approvers.String()
	}
	if t.Approvals > 1 {
		note += fmt.Sprintf("; %d approvals from different people", t.Approvals)
	}
	if p.separate {
		note += "; not by whoever started the run"
	}
	return note
}

// subtreeNote describes the gate a supervisor's requireToolApproval puts
// on every call of its sub-agents' runs, with the policy that comes with
// it, or "".
func subtreeNote(a *agentNode) string {
	if !a.spec.RequireToolApproval || len(a.spec.Agents) == 0 {
		return ""
	}
	note := "approval: every call of its sub-agents too (requireToolApproval)"
	if !a.spec.Approvers.Empty() {
		note += "; approvers: " + a.spec.Approvers.String()
	}
	if a.spec.SeparateDuties {
		note += "; not by whoever started the run"
	}
	return note
}

// envNote lists the environment variables a declaration reads, or "":
// the only ones its expressions can see.
func envNote(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "reads env " + strings.Join(names, ", ")
}

// modelEnv lists the environment variables a model's apiKey reads, or "".
func modelEnv(m *spec.Model) string {
	if m.APIKey == nil {
		return ""
	}
	return envNote(toolkits.EnvNames(m.APIKey.EnvNames()))
}

// suspendNote describes a tool's suspension point, or "".
func suspendNote(t *spec.Tool) string {
	sp := t.Suspend
	if sp == nil {
		return ""
	}
	note := "suspends when " + sp.When.Source()
	if t.ResumeSchema != nil {
		note += ", resumes with data matching resumeSchema"
	}
	if sk := t.Skip; sk != nil {
		note += "; skips when " + sk.When.Source()
	}
	return note
}

// reachable lists the agents in agent's tree, agent first, then the
// others in the order they are first delegated to.
func (g *Graph) reachable(agent string) ([]*agentNode, error) {
	root, ok := g.agents[agent]
	if !ok {
		return nil, &UnknownError{What: "agent", Name: agent, Known: g.Agents()}
	}
	out := []*agentNode{root}
	for i := 0; i < len(out); i++ {
		for _, sub := range out[i].spec.Agents {
			if n := g.agents[sub]; !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out, nil
}

// Render draws the compiled graph of an agent and the sub-agents it
// delegates to: models, tools, approval gates with their conditions,
// suspension points and delegation edges.
func (g *Graph) Render(agent, format string) (string, error) {
	agents, err := g.reachable(agent)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	switch format {
	case FormatText:
		for _, a := range agents {
			m := a.model.spec
			fmt.Fprintf(&b, "agent %s  model %s (%s)  maxSteps %d\n", a.spec.Name, m.Name, m.Provider, a.spec.MaxSteps)
			if n := modelEnv(m); n != "" {
				fmt.Fprintf(&b, "  model %s\n", n)
			}
			for _, sub := range a.spec.Agents {
				fmt.Fprintf(&b, "  delegates to %s\n", sub)
			}
			if n := subtreeNote(a); n != "" {
				fmt.Fprintf(&b, "  %s\n", n)
			}
			for _, k := range a.kits {
				fmt.Fprintf(&b, "  tool %s  (%s)\n", k.spec.Name, k.kit.Describe().Action)
				if n := envNote(k.kit.Describe().Env); n != "" {
					fmt.Fprintf(&b, "    %s\n", n)
				}
				if n := gateNote(a, k); n != "" {
					fmt.Fprintf(&b, "    %s\n", n)
				}
				if n := suspendNote(k.spec); n != "" {
					fmt.Fprintf(&b, "    %s\n", n)
				}
			}
		}
	case FormatMermaid:
		nodes, edges := diagram(agents)
		b.WriteString("flowchart LR\n")
		brackets := map[string][2]string{"agent": {"[", "]"}, "tool": {"[", "]"}, "gate": {"{{", "}}"}, "suspend": {"([", "])"}}
		for _, n := range nodes {
			lines := make([]string, len(n.label))
			for i, l := range n.label {
				lines[i] = mermaid(l)
			}
			br := brackets[n.shape]
			fmt.Fprintf(&b, "  %s%s\"%s\"%s\n", n.id, br[0], strings.Join(lines, "<br/>"), br[1])
		}
		for _, e := range edges {
			arrow := "-->"
			if e.dashed {
				arrow = "-.->"
			}
			if e.label != "" {
				arrow += "|" + e.label + "|"
			}
			fmt.Fprintf(&b, "  %s %s %s\n", e.from, arrow, e.to)
		}
	case FormatDot:
		nodes, edges := diagram(agents)
		fmt.Fprintf(&b, "digraph %q {\n  rankdir=LR;\n", agent)
		for _, n := range nodes {
			shape := map[string]string{"agent": "box, style=bold", "gate": "hexagon", "tool": "box", "suspend": "oval"}[n.shape]
			fmt.Fprintf(&b, "  %s [shape=%s, label=%q];\n", n.id, shape, strings.Join(n.label, "\n"))
		}
		for _, e := range edges {
			var attrs []string
			if e.label != "" {
				attrs = append(attrs, fmt.Sprintf("label=%q", e.label))
			}
			if e.dashed {
				attrs = append(attrs, "style=dashed")
			}
			if len(attrs) > 0 {
				fmt.Fprintf(&b, "  %s -> %s [%s];\n", e.from, e.to, strings.Join(attrs, ", "))
			} else {
				fmt.Fprintf(&b, "  %s -> %s;\n", e.from, e.to)
			}
		}
		b.WriteString("}\n")
	default:
		return "", usagef("unknown format %q: want text, mermaid or dot", format)
	}
	return b.String(), nil
}

// node and edge make up the picture mermaid and dot draw alike.
type node struct {
	id, shape string // shape: agent, gate, tool or suspend
	label     []string
}

type edge struct {
	from, to, label string
	dashed          bool
}

// diagram lays out agents, their approval gates, tools and suspension
// points, and delegations, once for every picture format.
func diagram(agents []*agentNode) ([]node, []edge) {
	var nodes []node
	var edges []edge
	for _, a := range agents {
		id := "agent_" + a.spec.Name
		label := []string{"agent " + a.spec.Name, "model " + a.model.spec.Name}
		if n := modelEnv(a.model.spec); n != "" {
			label = append(label, n)
		}
		if n := subtreeNote(a); n != "" {
			label = append(label, n)
		}
		nodes = append(nodes, node{id, "agent", label})
		for _, sub := range a.spec.Agents {
			edges = append(edges, edge{from: id, to: "agent_" + sub, label: "delegates"})
		}
		for _, k := range a.kits {
			name := k.spec.Name
			suffix := a.spec.Name + "__" + name
			from := id
			if n := gateNote(a, k); n != "" {
				nodes = append(nodes, node{"gate_" + suffix, "gate", []string{n}})
				edges = append(edges, edge{from: id, to: "gate_" + suffix})
				from = "gate_" + suffix
			}
			label := []string{"tool " + name, k.kit.Describe().Action}
			if n := envNote(k.kit.Describe().Env); n != "" {
				label = append(label, n)
			}
			nodes = append(nodes, node{"tool_" + suffix, "tool", label})
			edges = append(edges, edge{from: from, to: "tool_" + suffix})
			if n := suspendNote(k.spec); n != "" {
				nodes = append(nodes, node{"susp_" + suffix, "suspend", []string{n}})
				edges = append(edges, edge{from: "tool_" + suffix, to: "susp_" + suffix, dashed: true})
			}
		}
	}
	return nodes, edges
}

// mermaid escapes a label for a quoted mermaid node.
func mermaid(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "{", "#123;", "}", "#125;").Replace(s)
}
