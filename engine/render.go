package engine

import (
	"fmt"
	"slices"
	"strings"
)

// Graph picture formats.
const (
	FormatText    = "text"
	FormatMermaid = "mermaid"
	FormatDot     = "dot"
)

// gateNote describes a tool's approval gate in an agent, or "".
func gateNote(a *agentNode, t *toolNode) string {
	var why []string
	if need, isConst := t.spec.RequireApproval.IsConst(); isConst && need {
		why = append(why, "always")
	} else if !isConst {
		why = append(why, "when "+t.spec.RequireApproval.Source())
	}
	if a.spec.RequireToolApproval {
		why = append(why, "every call (agent requireToolApproval)")
	}
	if m := t.spec.MCP; m != nil {
		if need, isConst := m.RequireApproval.IsConst(); !isConst || need {
			why = append(why, "for its tools "+m.RequireApproval.Source())
		}
		if m.AutoApproveReadOnly {
			why = append(why, "(read-only tools free)")
		}
	}
	if len(why) == 0 {
		return ""
	}
	note := "approval: " + strings.Join(why, " or ")
	if d := t.spec.ApprovalTimeout; d > 0 {
		note += fmt.Sprintf(", expires after %s", d)
	} else if d := a.spec.ApprovalTimeout; d > 0 {
		note += fmt.Sprintf(", expires after %s", d)
	}
	return note
}

// suspendNote describes a tool's suspension point, or "".
func suspendNote(t *toolNode) string {
	sp := t.spec.Suspend
	if sp == nil {
		return ""
	}
	note := "suspends when " + sp.When.Source()
	if t.spec.ResumeSchema != nil {
		note += ", resumes with data matching resumeSchema"
	}
	if sk := t.spec.Skip; sk != nil {
		note += "; skips when " + sk.When.Source()
	}
	return note
}

// reachable lists the agents in agent's tree, agent first, then the
// others in the order they are first delegated to.
func (g *Graph) reachable(agent string) ([]*agentNode, error) {
	root, ok := g.agents[agent]
	if !ok {
		return nil, usagef("unknown agent %q (agents: %s)", agent, strings.Join(g.Agents(), ", "))
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
			for _, sub := range a.spec.Agents {
				fmt.Fprintf(&b, "  delegates to %s\n", sub)
			}
			for _, name := range a.spec.Tools {
				t := a.tools[name]
				fmt.Fprintf(&b, "  tool %s  (%s)\n", name, action(t))
				if n := gateNote(a, t); n != "" {
					fmt.Fprintf(&b, "    %s\n", n)
				}
				if n := suspendNote(t); n != "" {
					fmt.Fprintf(&b, "    %s\n", n)
				}
			}
		}
	case FormatMermaid:
		b.WriteString("flowchart LR\n")
		for _, a := range agents {
			id := "agent_" + a.spec.Name
			fmt.Fprintf(&b, "  %s[\"agent %s<br/>model %s\"]\n", id, a.spec.Name, a.model.spec.Name)
			for _, sub := range a.spec.Agents {
				fmt.Fprintf(&b, "  %s -->|delegates| agent_%s\n", id, sub)
			}
			for _, name := range a.spec.Tools {
				t := a.tools[name]
				tid := fmt.Sprintf("tool_%s__%s", a.spec.Name, name)
				from := id
				if n := gateNote(a, t); n != "" {
					gid := fmt.Sprintf("gate_%s__%s", a.spec.Name, name)
					fmt.Fprintf(&b, "  %s --> %s{{\"%s\"}}\n", id, gid, mermaid(n))
					from = gid
				}
				fmt.Fprintf(&b, "  %s --> %s[\"tool %s<br/>%s\"]\n", from, tid, name, mermaid(action(t)))
				if n := suspendNote(t); n != "" {
					fmt.Fprintf(&b, "  %s -.-> susp_%s__%s([\"%s\"])\n", tid, a.spec.Name, name, mermaid(n))
				}
			}
		}
	case FormatDot:
		fmt.Fprintf(&b, "digraph %q {\n  rankdir=LR;\n", agent)
		for _, a := range agents {
			id := "agent_" + a.spec.Name
			fmt.Fprintf(&b, "  %s [shape=box, style=bold, label=%q];\n", id, "agent "+a.spec.Name+"\nmodel "+a.model.spec.Name)
			for _, sub := range a.spec.Agents {
				fmt.Fprintf(&b, "  %s -> agent_%s [label=\"delegates\"];\n", id, sub)
			}
			for _, name := range a.spec.Tools {
				t := a.tools[name]
				tid := fmt.Sprintf("tool_%s__%s", a.spec.Name, name)
				from := id
				if n := gateNote(a, t); n != "" {
					gid := fmt.Sprintf("gate_%s__%s", a.spec.Name, name)
					fmt.Fprintf(&b, "  %s [shape=hexagon, label=%q];\n  %s -> %s;\n", gid, n, id, gid)
					from = gid
				}
				fmt.Fprintf(&b, "  %s [shape=box, label=%q];\n  %s -> %s;\n", tid, "tool "+name+"\n"+action(t), from, tid)
				if n := suspendNote(t); n != "" {
					fmt.Fprintf(&b, "  susp_%s__%s [shape=oval, label=%q];\n  %s -> susp_%s__%s [style=dashed];\n", a.spec.Name, name, n, tid, a.spec.Name, name)
				}
			}
		}
		b.WriteString("}\n")
	default:
		return "", usagef("unknown format %q: want text, mermaid or dot", format)
	}
	return b.String(), nil
}

// action names what a tool does.
func action(t *toolNode) string {
	switch {
	case t.spec.Exec != nil:
		argv := make([]string, len(t.spec.Exec.Command))
		for i, a := range t.spec.Exec.Command {
			argv[i] = a.Source()
		}
		return "exec " + strings.Join(argv, " ")
	case t.spec.Output != nil:
		return "output"
	case t.spec.HTTP != nil:
		return t.spec.HTTP.Method + " " + t.spec.HTTP.URL.Source()
	case t.spec.File != nil:
		return "file " + t.spec.File.Op + " in " + t.spec.File.Root
	case t.spec.MCP != nil:
		if t.spec.MCP.URL != "" {
			return "mcp server " + t.spec.MCP.URL
		}
		return "mcp server " + strings.Join(t.spec.MCP.Command, " ")
	}
	return "no action"
}

// mermaid escapes a label for a quoted mermaid node.
func mermaid(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "{", "#123;", "}", "#125;").Replace(s)
}
