package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/engine/store/backend"
	"github.com/agentctl/agentctl/internal/duration"
	"github.com/agentctl/agentctl/server"
)

const workerHelp = `Advance runs left for a worker, until stopped: runs started with
run --detach, runs decided with approve/decline/resume --detach, and runs a
stopped process left running (its lease expired). Several workers, on
several machines, share one database: each run is claimed by one worker
at a time (FOR UPDATE SKIP LOCKED on PostgreSQL), held by a lease the
worker renews, and released when it suspends, ends or the worker stops.
A worker that dies loses its leases; another takes its runs over, and a
call it was executing is reported interrupted, never run again silently.
A process that died on this worker's host (killed with SIGKILL) is seen
dead each --poll: its runs are taken over at once, not when its leases
run out.

A worker also delivers the notifications of the runs' notify: targets
(docs/notifications.md), with the secrets of its own environment.

On PostgreSQL workers wake on LISTEN/NOTIFY; on SQLite (one machine) they
look for work every --poll. SIGTERM or Ctrl-C stops a worker gracefully:
it claims nothing more, the tool in flight finishes for up to --grace
(default 30s), and the run is checkpointed and released. A tool still
running after that, or at a second signal, is killed and its call
recorded interrupted (retry or resolve it).

With --audit-key FILE (agentctl audit keygen's audit.key), a worker signs
the audit chain's head every --audit-every (default 5m) and at exit, and
stores it in the database: agentctl audit verify checks the chain against
it (docs/audit.md).

Logs go to standard error, one line per event (--log-format json for
JSON lines).

Examples:
  agentctl worker --db postgres://agentctl@db/agentctl --concurrency 4
  agentctl worker --agent oncall --log-format json
  agentctl worker --exit-when-idle     # drain the queue, then exit (cron, CI)`

type workerFlags struct {
	agent       string
	concurrency int
	logFormat   string
	lease       time.Duration
	poll        time.Duration
	exitIdle    bool
	auditKey    string        // signs the audit chain's head (audit_sign.go)
	auditEvery  time.Duration // how often
}

func (a *app) workerCmd() *cobra.Command {
	var f workerFlags
	cmd := &cobra.Command{
		Use:   "worker [--agent A] [--concurrency N]",
		Short: "Advance queued and detached-decided runs, until stopped",
		Long:  workerHelp,
		Args:  argsCheck(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			gcForLongRunning()
			if f.concurrency < 1 {
				return usageErr(fmt.Errorf("--concurrency %d: want 1 or more", f.concurrency))
			}
			if f.logFormat != "text" && f.logFormat != "json" {
				return usageErr(fmt.Errorf("--log-format %q: want text or json", f.logFormat))
			}
			if f.auditEvery < time.Second {
				return usageErr(fmt.Errorf("--audit-every %s: want 1s or more", f.auditEvery))
			}
			if f.lease < time.Second {
				return usageErr(fmt.Errorf("--lease %s: want 1s or more", f.lease))
			}
			return a.work(cmd.Context(), f)
		},
	}
	cmd.Flags().StringVar(&f.agent, "agent", "", "only advance runs of trees whose root runs `AGENT`")
	cmd.Flags().IntVar(&f.concurrency, "concurrency", 1, "advance up to `N` runs at once")
	cmd.Flags().StringVar(&f.logFormat, "log-format", "text", "log lines as text or json")
	f.lease, f.poll = 60*time.Second, time.Second
	cmd.Flags().Var(duration.Value{D: &f.lease}, "lease", "how long a run stays held if this worker stops renewing (dies)")
	cmd.Flags().Var(duration.Value{D: &f.poll}, "poll", "how often to look for work without a notification (SQLite; a safety net on PostgreSQL)")
	cmd.Flags().BoolVar(&f.exitIdle, "exit-when-idle", false, "exit once no run is queued, decided or running")
	f.auditEvery = server.DefaultAuditEvery
	cmd.Flags().StringVar(&f.auditKey, "audit-key", "", "sign the audit chain's head with the private key in `FILE` (agentctl audit keygen), every --audit-every and at exit")
	cmd.Flags().Var(duration.Value{D: &f.auditEvery}, "audit-every", "how often --audit-key signs the head, if it changed")
	return cmd
}

// work runs a worker pool until SIGTERM or Ctrl-C (see watchSignals), or
// until idle.
func (a *app) work(ctx context.Context, f workerFlags) error {
	var h slog.Handler = slog.NewTextHandler(a.stderr, nil)
	if f.logFormat == "json" {
		h = slog.NewJSONHandler(a.stderr, nil)
	}
	log := slog.New(h)
	var signing *headSigning
	if f.auditKey != "" {
		key, err := readSigningKey("--audit-key", f.auditKey)
		if err != nil {
			return err
		}
		signing = &headSigning{key: key, every: f.auditEvery}
	}
	db, err := a.store(ctx)
	if err != nil {
		return err
	}
	path, err := dbPath(a.dbPath)
	if err != nil {
		return err
	}
	ds, err := delegates(path, a.stderr)
	if err != nil {
		return err
	}
	ecfg, err := a.traced(ctx, engine.Config{Models: model.Default(), LeaseTTL: f.lease, Delegates: ds, Stop: a.stop})
	if err != nil {
		return err
	}
	e := engine.New(db, ecfg)
	a.addEngine(e)
	opts := engine.PoolOptions{Agent: f.agent, Concurrency: f.concurrency, Poll: f.poll, ExitWhenIdle: f.exitIdle,
		Log: log, Where: []any{"db", db.Path(), "backend", db.Dialect()}}
	wait, stopWait, err := a.wakeups(ctx, backend.ChannelWork)
	if err != nil {
		return err
	}
	defer stopWait()
	opts.Wait = wait
	stopOutbox, err := a.workerOutbox(ctx, db, e, log)
	if err != nil {
		return err
	}
	defer stopOutbox()
	defer startSigning(ctx, db, signing, "worker", log)() // after the pool: the last head at exit
	_, err = e.Serve(ctx, opts)
	return err
}
