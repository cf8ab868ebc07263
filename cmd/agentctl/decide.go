package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

// decideCmd builds approve or decline.
func (a *app) decideCmd(action string) *cobra.Command {
	var (
		callID, as, reason string
		out                format
	)
	cmd := &cobra.Command{
		Use:  action + " RUNID [--call ID] [--as NAME] [--reason TEXT]",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			e, err := a.engine(ctx)
			if err != nil {
				return err
			}
			id, err := resolveRun(ctx, e, argv[0])
			if err != nil {
				return err
			}
			v, err := e.Decide(ctx, engine.Decision{
				RunID: id, CallID: callID, Action: action, By: as, OSUser: osUser(), Reason: reason,
			})
			if err != nil {
				return err
			}
			return printRun(a.stdout, out, v)
		},
	}
	switch action {
	case store.Approve:
		cmd.Short = "Approve a pending tool call and continue the run"
		cmd.Long = `Approve lets a pending tool call execute, then continues the run in this
process until it completes (exit 0), fails (exit 1) or waits for a human
again (exit 3). RUNID may be any unique prefix of a run id. Without --call
the run's only pending call is approved. Of several processes deciding the
same call exactly one wins; the others exit 4 and change nothing.`
		cmd.Example = `  agentctl approve 01JD3F --as alice --reason "ticket CHG-42"
  agentctl approve 01JD3F --call call_2 -o json`
	case store.Decline:
		cmd.Short = "Decline a pending tool call and continue the run"
		cmd.Long = `Decline refuses a pending tool call: it never executes, and the model is
told that a human declined it, with the reason, and not to retry unless
asked. The run then continues in this process, as with approve.`
		cmd.Example = `  agentctl decline 01JD3F --reason "not during the freeze"
  agentctl decline 01JD3F --call call_2 --as bob`
	}
	cmd.Flags().StringVar(&callID, "call", "", "the call to decide (default: the only pending call)")
	cmd.Flags().StringVar(&as, "as", "", "record the decision on behalf of NAME (default: the OS user)")
	cmd.Flags().StringVar(&reason, "reason", "", fmt.Sprintf("why; kept in the audit trail%s", map[string]string{
		store.Decline: " and told to the model"}[action]))
	addFormatFlag(cmd, &out)
	return cmd
}
