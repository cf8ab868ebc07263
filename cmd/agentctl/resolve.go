package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

func (a *app) resolveCmd() *cobra.Command {
	var (
		d            = engine.Decision{Action: store.Resolve}
		output, fail string
		out          runFlags
	)
	cmd := &cobra.Command{
		Use:   "resolve RUNID [--call ID] (--output TEXT | --fail TEXT)",
		Short: "Record by hand the outcome of a tool call a crash interrupted",
		Long: `Resolve records what an interrupted call did, as a human found out: --output
is its result, --fail a failure. The model is told, and the run goes on.`,
		Example: `  agentctl resolve 01JD3F --call call_2 --output "nginx was restarted at 10:02"
  agentctl resolve 01JD3F --fail "the restart did not happen"`,
		Args: needsOne("a run id"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			switch {
			case (output == "") == (fail == ""):
				return usageErr(errors.New("resolve: pass --output TEXT or --fail TEXT"))
			case fail != "":
				d.Output, d.Failed = fail, true
			default:
				d.Output = output
			}
			return a.decide(cmd, argv[0], &out, d)
		},
	}
	cmd.Flags().StringVar(&d.CallID, "call", "", "the interrupted call (default: the only one)")
	cmd.Flags().StringVar(&output, "output", "", "the call's result")
	cmd.Flags().StringVar(&fail, "fail", "", "the call failed, with this message")
	addDecisionFlags(cmd, &d)
	out.addRest(cmd) // --output is the call's result here; --events gives JSON
	return cmd
}
