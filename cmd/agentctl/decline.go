package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

func (a *app) declineCmd() *cobra.Command {
	var (
		d   = engine.Decision{Action: store.Decline}
		out runFlags
	)
	cmd := &cobra.Command{
		Use:   "decline RUNID [--call ID | --all] [--as NAME] [--reason TEXT]",
		Short: "Decline a pending tool call and continue the run",
		Long: `Decline refuses a pending call, whether it waits for approval or for
resume data: it never executes, and the model is told that a human
declined it, with the reason, and not to retry unless asked. The run then
continues in this process, as with approve.`,
		Example: `  agentctl decline 01JD3F --reason "not during the freeze"
  agentctl decline 01JD3F --all --as bob`,
		Args: needsOne("a run id"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if d.All && d.CallID != "" {
				return usageErr(errors.New("--all and --call exclude each other"))
			}
			return a.decide(cmd, argv[0], &out, d)
		},
	}
	cmd.Flags().StringVar(&d.CallID, "call", "", "the call to decide (default: the only one waiting)")
	cmd.Flags().BoolVar(&d.All, "all", false, "decide every call waiting for this decision")
	addDecisionFlags(cmd, &d)
	out.add(cmd)
	return cmd
}
