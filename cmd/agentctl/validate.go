package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/spec"
)

func (a *app) validateCmd() *cobra.Command {
	var flagged []string
	cmd := &cobra.Command{
		Use:   "validate FILE|DIR... (or -f FILE)",
		Short: "Check agent specs and report every problem",
		Long: `Validate loads spec files (a directory means every *.yaml and *.yml file
in it) as one spec, checks them against the spec schema and for meaning
(references, expressions, tool schemas), and prints every problem as
file:line:col: message. It exits 0 when the spec is valid and 2 when not.
The files are arguments, or -f FILE (repeatable) as run and graph take
them, or both.`,
		Example: `  agentctl validate examples/agents/oncall.yaml
  agentctl validate agents/ tools/
  agentctl validate -f agents/ -f tools/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			files := append(args, flagged...)
			if len(files) == 0 {
				return cmdUsageErr(cmd, fmt.Errorf("validate needs a spec: %s", usageLine(cmd)))
			}
			s, g, err := a.compileSpec(files)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "ok: %d %s (%s), %d %s, %d %s\n",
				len(s.Agents), plural(len(s.Agents), "agent", "agents"), strings.Join(g.Agents(), ", "),
				len(s.Tools), plural(len(s.Tools), "tool", "tools"),
				len(s.Models), plural(len(s.Models), "model", "models"))
			printRuleMatches(a.stdout, s)
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&flagged, "file", "f", nil, "spec file or directory (repeatable), as well as or instead of arguments")
	return cmd
}

// compileSpec loads and compiles spec files with the default providers.
func (a *app) compileSpec(files []string) (*spec.Spec, *engine.Graph, error) {
	s, err := a.loadSpec(files)
	if err != nil {
		return nil, nil, err
	}
	g, err := engine.Compile(s, nil, nil)
	if err != nil {
		return nil, nil, inputErr(err)
	}
	return s, g, nil
}

// loadSpec loads spec files; a file that cannot be read is a usage error.
func (a *app) loadSpec(files []string) (*spec.Spec, error) {
	s, err := spec.Files{MaxFile: a.limits.spec}.Load(files...)
	if err != nil {
		if _, ok := err.(spec.Errors); ok {
			return nil, err
		}
		return nil, inputErr(err)
	}
	return s, nil
}
