package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
)

func (a *app) eventsCmd() *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use:   "events RUNID [--follow]",
		Short: "Print a run's events as JSON lines",
		Long: `Events prints the events of a run, one JSON object per line, in order:
text-delta, tool-call, tool-call-approval, tool-call-suspended,
tool-result, step-finish, finish and error, each with type and runId first.
--follow keeps printing as other processes advance the run, until it
completes or fails.`,
		Example: `  agentctl events 01JD3F
  agentctl events 01JD3F --follow | jq -c 'select(.type == "tool-result")'`,
		Args: argsCheck(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			e, id, err := a.engineAndRun(ctx, argv[0], nil)
			if err != nil {
				return err
			}
			return a.printEvents(ctx, e, id, follow)
		},
	}
	cmd.Flags().BoolVar(&follow, "follow", false, "keep printing until the run completes or fails")
	return cmd
}

// followPoll is how often --follow looks for new events.
const followPoll = 200 * time.Millisecond

func (a *app) printEvents(ctx context.Context, e *engine.Engine, id string, follow bool) error {
	var after int64
	for {
		evs, done, err := e.Events(ctx, id, after)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			fmt.Fprintf(a.stdout, "%s\n", ev.Data)
			after = ev.ID
		}
		if !follow || done {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followPoll):
		}
	}
}
