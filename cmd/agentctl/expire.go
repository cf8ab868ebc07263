package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (a *app) expireCmd() *cobra.Command {
	var out format
	cmd := &cobra.Command{
		Use:   "expire",
		Short: "Decline every pending call past its approvalTimeout, take due escalation steps (for cron)",
		Long: `Expire sweeps all runs: each pending call past its deadline (approvalTimeout
on its tool or agent) is declined with reason "expired", recorded as a
decision by agentctl, and its run continues. A worker does the same, and
so does the next command that decides or continues a run (approve,
decline, resume, retry, resolve, send, continue); commands that only show
state (list, show, events, status) never do: they show the call overdue.
It also takes the escalation steps that are due (docs/escalation.md),
and says how many it took.`,
		Example: `  agentctl expire
  */5 * * * * agentctl expire -o json >> /var/log/agentctl-expire.log`,
		Args: argsCheck(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			e, err := a.engine(ctx)
			if err != nil {
				return err
			}
			sw, err := e.ExpireAll(ctx, "")
			if err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(a.stdout, map[string]any{"expiredRuns": orEmpty(sw.Expired),
					"decidedRuns": orEmpty(sw.Decided), "escalationSteps": sw.Steps})
			}
			fmt.Fprintf(a.stdout, "expired calls in %d %s\n", len(sw.Expired), plural(len(sw.Expired), "run", "runs"))
			for _, id := range sw.Expired {
				fmt.Fprintf(a.stdout, "  %s\n", id)
			}
			if sw.Steps > 0 {
				fmt.Fprintf(a.stdout, "took %d escalation %s; a step decided calls in %d %s\n", sw.Steps, plural(sw.Steps, "step", "steps"),
					len(sw.Decided), plural(len(sw.Decided), "run", "runs"))
				for _, id := range sw.Decided {
					fmt.Fprintf(a.stdout, "  %s\n", id)
				}
			}
			return nil
		},
	}
	addFormatFlag(cmd, &out)
	return cmd
}

// orEmpty is ids, or an empty list for none: JSON [] rather than null.
func orEmpty(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}
