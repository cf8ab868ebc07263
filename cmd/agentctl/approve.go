package main

import (
	"encoding/json"
	"errors"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

func (a *app) approveCmd() *cobra.Command {
	var (
		d           = engine.Decision{Action: store.Approve}
		args        string
		out         runFlags
		interactive bool
	)
	cmd := &cobra.Command{
		Use:   "approve RUNID [--call ID | --all] [--as NAME] [--reason TEXT]",
		Short: "Approve a pending tool call and continue the run",
		Long: `Approve lets a call waiting for approval execute, then continues the run in
this process until it completes (exit 0), fails (exit 1) or waits for a
human again (exit 3). RUNID may be any unique prefix of a run id. Without
--call the run's only call waiting for approval is approved; --all
approves every one. --args replaces the call's arguments (checked against
the tool's input schema first; the edit is recorded and the model is told);
--always also approves every later call of the same tool in this run. Of
several processes deciding the same call exactly one wins; the others exit
4 and change nothing.`,
		Example: `  agentctl approve 01JD3F --as alice --reason "ticket CHG-42"
  agentctl approve 01JD3F --call call_2 --args '{"service":"nginx","env":"staging"}'
  agentctl approve 01JD3F --all --always -o json
  agentctl approve 01JD3F -i --as alice`,
		Args: needsOne("a run id"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if d.All && d.CallID != "" {
				return usageErr(errors.New("--all and --call exclude each other"))
			}
			if interactive {
				return a.approveInteractive(cmd, argv[0], &out, d)
			}
			if cmd.Flags().Changed("args") {
				d.Args = json.RawMessage(args)
				if err := a.limits.check("--args", d.Args); err != nil {
					return err
				}
				if err := checkJSON("--args", d.Args); err != nil {
					return err
				}
			}
			return a.decide(cmd, argv[0], &out, d)
		},
	}
	cmd.Flags().StringVar(&args, "args", "", "approve with these arguments instead (a JSON object)")
	cmd.Flags().BoolVar(&d.Always, "always", false, "also approve every later call of the same tool in this run")
	cmd.Flags().StringVar(&d.Preview, "preview", "", "approve only if the call's preview is still the one of `DIGEST` (sha256:..., as show prints it); else exit 4")
	cmd.Flags().StringVar(&d.CallID, "call", "", "the call to decide (default: the only one waiting)")
	cmd.Flags().BoolVar(&d.All, "all", false, "decide every call waiting for this decision")
	addDecisionFlags(cmd, &d)
	out.add(cmd)
	addInteractiveFlag(cmd, &interactive)
	return cmd
}
