package main

import (
	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/spec"
)

func (a *app) schemaCmd() *cobra.Command {
	var markdown bool
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the spec format",
		Long: `Schema prints the JSON Schema that spec files are checked against, for
editors: save it and point yaml-language-server at it with a first line
# yaml-language-server: $schema=PATH. With --markdown it prints the spec
reference generated from it, every field with its type and meaning
(docs/reference/spec.md).`,
		Example: `  agentctl schema > .agentctl.schema.json
  agentctl schema --markdown > spec-reference.md`,
		Args: argsCheck(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			out := spec.FormatSchema()
			if markdown {
				var err error
				if out, err = spec.Reference(); err != nil {
					return err
				}
			}
			_, err := a.stdout.Write(out)
			return err
		},
	}
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print the spec reference in Markdown instead")
	return cmd
}
