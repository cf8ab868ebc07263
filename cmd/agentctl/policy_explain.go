package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
)

func (a *app) policyExplainCmd() *cobra.Command {
	var callID string
	cmd := &cobra.Command{
		Use:   "explain RUN [--call ID]",
		Short: "Say which policy rule decided a call, when, and who may decide it",
		Long: `policy explain reads a call of a run and says what the spec's policy
decided for it: the rule that applied (or that none did and the tool's
own policy decided), when it was evaluated, the shadow rules that
matched, and, while the call waits, who may decide it.`,
		Example: `  agentctl policy explain 01JD3F --call call_1`,
		Args:    needsOne("a run id"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if a.remote != nil {
				return usageErr(errors.New("policy explain reads the database: use --db, not --server"))
			}
			a.dbOpts.ReadOnly = true
			ctx := cmd.Context()
			e, id, err := a.engineAndRun(ctx, argv[0], nil)
			if err != nil {
				return err
			}
			d, err := e.Detail(ctx, id)
			if err != nil {
				return err
			}
			if callID == "" {
				if len(d.Calls) != 1 {
					return cmdUsageErr(cmd, fmt.Errorf("run %s has %d calls: choose one with --call ID", d.RunID, len(d.Calls)))
				}
				callID = d.Calls[0].CallID
			}
			return explainCall(a, d, callID)
		},
	}
	cmd.Flags().StringVar(&callID, "call", "", "the call `ID` to explain (default: the run's only call)")
	return cmd
}

// explainCall prints what the policy decided for call id of run d.
func explainCall(a *app, d *engine.RunDetail, id string) error {
	w := a.stdout
	for _, c := range d.Calls {
		if c.CallID != id {
			continue
		}
		fmt.Fprintf(w, "call     %s  %s  %s\n", c.CallID, c.Tool, c.Status)
		switch g := c.Gate; {
		case g == nil || g.Rule == nil:
			fmt.Fprintln(w, "rule     none matched: the tool's own policy decided")
		default:
			fmt.Fprintf(w, "rule     %s\n", oneLine(g.Rule.Phrase(), 300))
			fmt.Fprintf(w, "at       %s\n", stamp(g.Rule.At))
		}
		if c.Gate != nil {
			fmt.Fprintf(w, "approval %s\n", c.Gate.Phrase())
			for _, s := range c.Gate.Shadow {
				fmt.Fprintf(w, "shadow   would be %s (not enforced)\n", oneLine(s.Phrase(), 300))
			}
		}
		for _, p := range d.Pending {
			if p.CallID == id {
				printDeciders(w, p)
			}
		}
		return nil
	}
	return usageErr(fmt.Errorf("run %s has no call %s", d.RunID, id))
}
