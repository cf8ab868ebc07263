package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

func (a *app) listCmd() *cobra.Command {
	var (
		status, agent string
		limit         int
		out           format
	)
	cmd := &cobra.Command{
		Use:   "list [--status S] [--agent A] [--limit N]",
		Short: "List runs, newest first",
		Example: `  agentctl list --status suspended
  agentctl list --agent oncall --limit 5 -o json`,
		Args: argsCheck(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.dbOpts.ReadOnly = true // reads only read: see docs/architecture.md
			switch st := store.Status(status); st {
			case "", store.Queued, store.Running, store.Suspended, store.Stalled, store.Completed, store.Failed:
			default:
				return usageErr(fmt.Errorf("invalid --status %q: want queued, running, suspended, stalled, completed or failed", status))
			}
			if limit < 0 {
				return usageErr(fmt.Errorf("invalid --limit %d: want 0 (no limit) or more", limit))
			}
			ctx := cmd.Context()
			e, err := a.engine(ctx)
			if err != nil {
				return err
			}
			runs, err := e.List(ctx, store.Filter{Status: store.Status(status), Agent: agent, Limit: limit, Roots: true})
			if err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(a.stdout, runs)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tAGENT\tSTATUS\tPENDING\tEXPIRES\tUPDATED\tINPUT")
			for _, r := range runs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.RunID, r.Agent, r.Status, pendingCell(r.Pending),
					firstDeadline(r.Pending), stamp(r.UpdatedAt), oneLine(r.Input, 40))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only runs in this status: queued, running, suspended, stalled, completed or failed")
	cmd.Flags().StringVar(&agent, "agent", "", "only runs of this agent")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most N runs (0: all)")
	addFormatFlag(cmd, &out)
	return cmd
}

// pendingCell counts pending calls, with the approvals of those that
// need several: 1 (1 of 2 approvals).
func pendingCell(ps []engine.PendingView) string {
	cell := strconv.Itoa(len(ps))
	var notes []string
	for _, p := range ps {
		if p.Needed > 1 {
			notes = append(notes, fmt.Sprintf("%d of %d approvals", p.Approvals, p.Needed))
		}
	}
	if len(notes) > 0 {
		cell += " (" + strings.Join(notes, ", ") + ")"
	}
	return cell
}

// firstDeadline is the earliest deadline of pending calls, "overdue"
// when it has passed, or "-".
func firstDeadline(ps []engine.PendingView) string {
	var first *engine.PendingView
	for i, p := range ps {
		if p.Deadline != nil && (first == nil || p.Deadline.Before(*first.Deadline)) {
			first = &ps[i]
		}
	}
	switch {
	case first == nil:
		return "-"
	case first.Overdue:
		return "overdue"
	}
	return stamp(*first.Deadline)
}
