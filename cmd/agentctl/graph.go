package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
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
		Args: argsCheck(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if len(files) == 0 {
				return usageErr(errors.New("graph: no spec: pass -f FILE or -f DIR"))
			}
			_, g, err := a.compileSpec(files)
			if err != nil {
				return err
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
