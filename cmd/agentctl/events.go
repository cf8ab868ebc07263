package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/backend"
)

func (a *app) eventsCmd() *cobra.Command {
	var follow bool
	var until store.Status
	cmd := &cobra.Command{
		Use:   "events RUNID [--follow]",
		Short: "Print a run's events as JSON lines",
		Long: `Events prints the events of a run and of its sub-agents' runs, one JSON
object per line, in order: text-delta, tool-call, tool-call-approval,
tool-call-suspended, decision (who decided what, as whom, why),
tool-result, step-finish, finish, error and stalled, each with
type, runId, path (the agents from the root to its run) and at (when
it happened) first; step-finish has the model's latencySeconds. Of a
root run, they are the whole tree's.
--follow keeps printing as other processes advance the run, until it
completes or fails; --until stalled also stops when its model could not
be asked (agentctl continue asks again).`,
		Example: `  agentctl events 01JD3F
  agentctl events 01JD3F --follow | jq -c 'select(.type == "tool-result")'`,
		Args: argsCheck(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			switch until {
			case "":
			case store.Queued, store.Running, store.Suspended, store.Stalled, store.Completed, store.Failed:
				if !follow {
					return usageErr(errors.New("--until needs --follow"))
				}
			default:
				return usageErr(fmt.Errorf("invalid --until %q: want queued, running, suspended, stalled, completed or failed", until))
			}
			a.dbOpts.ReadOnly = true // reads only read: see docs/architecture.md
			ctx := cmd.Context()
			if a.remote != nil {
				return a.remoteEvents(ctx, argv[0], follow, until)
			}
			e, id, err := a.engineAndRun(ctx, argv[0], nil)
			if err != nil {
				return err
			}
			return a.printEvents(ctx, e, id, follow, until)
		},
	}
	cmd.Flags().BoolVar(&follow, "follow", false, "keep printing until the run completes or fails")
	cmd.Flags().StringVar((*string)(&until), "until", "", "with --follow, stop also when the run reaches `STATUS` (suspended, stalled, running)")
	return cmd
}

// followPoll is how often --follow looks for new events.
const followPoll = 200 * time.Millisecond

func (a *app) printEvents(ctx context.Context, e *engine.Engine, id string, follow bool, until store.Status) error {
	var wait func(context.Context, time.Duration) error
	if follow {
		w, stopWait, err := a.wakeups(ctx, backend.ChannelEvents)
		if err != nil {
			return err
		}
		defer stopWait()
		wait = w
	}
	cur := &engine.Cursor{RunID: id}
	for {
		evs, done, err := cur.Next(ctx, e)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			fmt.Fprintf(a.stdout, "%s\n", ev.JSON())
		}
		if !follow || done {
			return nil
		}
		if until != "" {
			if v, err := e.Inspect(ctx, id); err == nil && v.Status == until {
				return nil
			}
		}
		// On PostgreSQL a notification wakes us (any run's: look again);
		// the timeout is the poll on SQLite and a safety net.
		if err := wait(ctx, followPoll); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if e, err = a.reopen(ctx, e); err != nil {
			return err
		}
	}
}

// reopen opens a SQLite database anew for the next look of a follower: a
// reader that does not own the file reads it as it is, which shows what
// writers committed only to a new connection. A PostgreSQL connection
// sees every commit as it is.
func (a *app) reopen(ctx context.Context, e *engine.Engine) (*engine.Engine, error) {
	if path, err := dbPath(a.dbPath); err != nil || backend.IsPostgres(path) {
		return e, err
	}
	if a.db != nil {
		a.db.Close()
		a.db = nil
	}
	db, err := a.store(ctx)
	if err != nil {
		return nil, err
	}
	return engine.New(db, engine.Config{}), nil
}
