package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

// decideCmd builds approve or decline.
func (a *app) decideCmd(action string) *cobra.Command {
	var (
		d      engine.Decision
		args   string
		out    runFlags
		always bool
	)
	cmd := &cobra.Command{
		Use:  action + " RUNID [--call ID | --all] [--as NAME] [--reason TEXT]",
		Args: argsCheck(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if d.All && d.CallID != "" {
				return usageErr(errors.New("--all and --call exclude each other"))
			}
			if args != "" {
				d.Args = json.RawMessage(args)
				if err := checkJSON("--args", d.Args); err != nil {
					return err
				}
			}
			d.Always = always
			return a.decide(cmd, argv[0], &out, d)
		},
	}
	switch action {
	case store.Approve:
		cmd.Short = "Approve a pending tool call and continue the run"
		cmd.Long = `Approve lets a call waiting for approval execute, then continues the run in
this process until it completes (exit 0), fails (exit 1) or waits for a
human again (exit 3). RUNID may be any unique prefix of a run id. Without
--call the run's only call waiting for approval is approved; --all
approves every one. --args replaces the call's arguments (checked against
the tool's input schema first; the edit is recorded and the model is told);
--always also approves every later call of the same tool in this run. Of
several processes deciding the same call exactly one wins; the others exit
4 and change nothing.`
		cmd.Example = `  agentctl approve 01JD3F --as alice --reason "ticket CHG-42"
  agentctl approve 01JD3F --call call_2 --args '{"service":"nginx","env":"staging"}'
  agentctl approve 01JD3F --all --always -o json`
		cmd.Flags().StringVar(&args, "args", "", "approve with these arguments instead (a JSON object)")
		cmd.Flags().BoolVar(&always, "always", false, "also approve every later call of the same tool in this run")
	case store.Decline:
		cmd.Short = "Decline a pending tool call and continue the run"
		cmd.Long = `Decline refuses a pending call, whether it waits for approval or for
resume data: it never executes, and the model is told that a human
declined it, with the reason, and not to retry unless asked. The run then
continues in this process, as with approve.`
		cmd.Example = `  agentctl decline 01JD3F --reason "not during the freeze"
  agentctl decline 01JD3F --all --as bob`
	}
	d.Action = action
	cmd.Flags().StringVar(&d.CallID, "call", "", "the call to decide (default: the only one waiting)")
	cmd.Flags().BoolVar(&d.All, "all", false, "decide every call waiting for this decision")
	addDecisionFlags(cmd, &d)
	out.add(cmd)
	return cmd
}

// addDecisionFlags adds the audit flags every decision takes.
func addDecisionFlags(cmd *cobra.Command, d *engine.Decision) {
	cmd.Flags().StringVar(&d.By, "as", "", "record the decision on behalf of NAME (default: the OS user)")
	cmd.Flags().StringVar(&d.Reason, "reason", "", "why; kept in the audit trail (a decline's reason is told to the model)")
	cmd.Flags().BoolVar(&d.Detach, "detach", false, "record the decision and return (exit 0): a worker advances the run (agentctl worker)")
}

// decide resolves the run id and carries out a decision.
func (a *app) decide(cmd *cobra.Command, runID string, out *runFlags, d engine.Decision) error {
	ctx := cmd.Context()
	e, id, err := a.engineAndRun(ctx, runID, out)
	if err != nil {
		return err
	}
	d.RunID, d.OSUser = id, osUser()
	v, err := e.Decide(ctx, d)
	if err != nil {
		return err
	}
	if d.Detach {
		return a.detached(out, v, "decision recorded; a worker advances the run")
	}
	return a.finish(out, v)
}

// detached prints a run a detached command left for a worker; it exits
// 0 whatever the run's status.
func (a *app) detached(f *runFlags, v *engine.RunView, note string) error {
	if f.out == "json" {
		return writeJSON(a.stdout, v)
	}
	fmt.Fprintf(a.stdout, "run %s  %s  %s\n%s\n", v.RunID, v.Agent, v.Status, note)
	return nil
}
