package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

func (a *app) listCmd() *cobra.Command {
	var (
		status, agent string
		limit         int
		roots         bool
		out           format
	)
	cmd := &cobra.Command{
		Use:   "list [--status S] [--agent A [--roots]] [--limit N]",
		Short: "List runs, newest first",
		Long: `List prints runs, newest first. Without --agent it lists the runs users
started (roots): a supervisor tree once, with every call waiting in it.
--agent A lists every run of agent A, a sub-agent's runs in trees
included, each naming its root (column ROOT, rootId in -o json);
--roots keeps only the runs users started.`,
		Example: `  agentctl list --status suspended
  agentctl list --agent oncall --limit 5 -o json
  agentctl list --agent db_admin --roots`,
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
			if roots && agent == "" {
				return usageErr(errors.New("--roots goes with --agent: without it, list lists only roots"))
			}
			// A sub-agent's runs are listed when asked for by agent.
			f := store.Filter{Status: store.Status(status), Agent: agent, Limit: limit, Roots: agent == "" || roots}
			ctx := cmd.Context()
			if a.remote != nil {
				return a.remoteList(ctx, f, out)
			}
			e, err := a.engine(ctx)
			if err != nil {
				return err
			}
			runs, err := e.List(ctx, f)
			if err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(a.stdout, runs)
			}
			printList(a, runs)
			return nil
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only runs in this status: queued, running, suspended, stalled, completed or failed")
	cmd.Flags().StringVar(&agent, "agent", "", "only runs of this agent, its runs as a sub-agent included")
	cmd.Flags().BoolVar(&roots, "roots", false, "with --agent, only the runs users started, not a sub-agent's")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most N runs (0: all)")
	addFormatFlag(cmd, &out)
	return cmd
}

// printList prints runs as a table; a column ROOT names the root of each
// sub-agent's run when the list has any.
func printList(a *app, runs []*engine.RunView) {
	children := slices.ContainsFunc(runs, func(r *engine.RunView) bool { return r.ParentID != "" })
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	if children {
		fmt.Fprint(tw, "RUN\tROOT\t")
	} else {
		fmt.Fprint(tw, "RUN\t")
	}
	fmt.Fprintf(tw, "AGENT\t%s\tPENDING\tEXPIRES\tUPDATED\tAGE\tINPUT\n", paintHeader(a.stdout, "STATUS"))
	now := time.Now()
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t", r.RunID)
		if children {
			root := "-"
			if r.ParentID != "" {
				root = r.RootID
			}
			fmt.Fprintf(tw, "%s\t", root)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Agent, paint(a.stdout, r.Status), pendingCell(r.Pending),
			firstDeadline(r.Pending), stamp(r.UpdatedAt), age(now, r.CreatedAt), oneLine(r.Input, 40))
	}
	tw.Flush()
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
