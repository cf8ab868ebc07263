package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (a *app) expireCmd() *cobra.Command {
	var out format
	cmd := &cobra.Command{
		Use:   "expire",
		Short: "Decline every pending call past its approvalTimeout (for cron)",
		Long: `Expire sweeps all runs: each pending call past its deadline (approvalTimeout
on its tool or agent) is declined with reason "expired", recorded as a
decision by agentctl, and its run continues. A worker does the same, and
so does the next command that decides or continues a run (approve,
decline, resume, retry, resolve, send, continue); commands that only show
state (list, show, events, status) never do: they show the call overdue.`,
		Example: `  agentctl expire
  */5 * * * * agentctl expire -o json >> /var/log/agentctl-expire.log`,
		Args: argsCheck(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			e, err := a.engine(ctx)
			if err != nil {
				return err
			}
			ids, err := e.ExpireAll(ctx, "")
			if err != nil {
				return err
			}
			if out == "json" {
				if ids == nil {
					ids = []string{}
				}
				return writeJSON(a.stdout, map[string]any{"expiredRuns": ids})
			}
			fmt.Fprintf(a.stdout, "expired calls in %d %s\n", len(ids), plural(len(ids), "run", "runs"))
			for _, id := range ids {
				fmt.Fprintf(a.stdout, "  %s\n", id)
			}
			return nil
		},
	}
	addFormatFlag(cmd, &out)
	return cmd
}
