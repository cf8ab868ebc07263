package main

import (
	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

func (a *app) retryCmd() *cobra.Command {
	var (
		d   = engine.Decision{Action: store.Retry}
		out runFlags
	)
	cmd := &cobra.Command{
		Use:   "retry RUNID [--call ID]",
		Short: "Run again a tool call a crash interrupted",
		Long: `A call found executing after its process died is interrupted: its side
effect may or may not have happened, so agentctl never runs it again by
itself (unless its tool is idempotent). Retry runs it again, recorded in
the audit trail; resolve records its outcome instead.`,
		Example: `  agentctl retry 01JD3F --call call_2 --reason "checked: nothing was restarted"`,
		Args:    needsOne("a run id"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.decide(cmd, argv[0], &out, d)
		},
	}
	cmd.Flags().StringVar(&d.CallID, "call", "", "the interrupted call (default: the only one)")
	addDecisionFlags(cmd, &d)
	out.add(cmd)
	return cmd
}
