package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/spec"
)

func (a *app) graphCmd() *cobra.Command {
	var (
		files  []string
		format string
	)
	cmd := &cobra.Command{
		Use:   "graph AGENT -f FILE|DIR... [--format text|mermaid|dot]",
		Short: "Draw the compiled graph of an agent and its sub-agents",
		Long: `Graph prints what running AGENT can reach once the spec is compiled: each
agent with its model, its tools with their approval gates (and their
conditions) and suspension points, and the delegations to sub-agents.
Mermaid renders in GitHub and most docs tools; dot is Graphviz.`,
		Example: `  agentctl graph incident -f examples/agents/
  agentctl graph incident -f examples/agents/ --format mermaid > incident.mmd
  agentctl graph incident -f examples/agents/ --format dot | dot -Tsvg > incident.svg`,
		Args: needsOne("an agent name"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if len(files) == 0 {
				return usageErr(errors.New("graph: no spec: pass -f FILE or -f DIR"))
			}
			s, err := a.loadSpec(files)
			if err != nil {
				return err
			}
			asWritten(s)
			g, err := engine.Compile(s, nil, nil)
			if err != nil {
				return inputErr(err)
			}
			out, err := g.Render(argv[0], format)
			if err != nil {
				return err
			}
			fmt.Fprint(a.stdout, out)
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "file", "f", nil, "spec file or directory (repeatable)")
	cmd.Flags().StringVar(&format, "format", engine.FormatText, "text, mermaid or dot")
	return cmd
}

// asWritten makes the file tools of s show their roots as the spec wrote
// them, not resolved: a picture of the spec is then the same wherever it
// lies. The tools must not run afterwards.
func asWritten(s *spec.Spec) {
	for _, t := range s.Tools {
		if t.File != nil && t.File.RootAsWritten != "" {
			f := *t.File
			f.Root = f.RootAsWritten
			t.File = &f
		}
	}
}
