package main

import (
	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/spec"
)

func (a *app) schemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the spec format",
		Long: `Schema prints the JSON Schema that spec files are checked against, for
editors: save it and point yaml-language-server at it with a first line
# yaml-language-server: $schema=PATH`,
		Example: `  agentctl schema > .agentctl.schema.json`,
		Args:    argsCheck(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			_, err := a.stdout.Write(spec.FormatSchema())
			return err
		},
	}
}
