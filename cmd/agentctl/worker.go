package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/postgres"
)

const workerHelp = `Advance runs left for a worker, until stopped: runs started with
run --detach, runs decided with approve/decline/resume --detach, and runs a
stopped process left running (its lease expired). Several workers, on
several machines, share one database: each run is claimed by one worker
at a time (FOR UPDATE SKIP LOCKED on PostgreSQL), held by a lease the
worker renews, and released when it suspends, ends or the worker stops.
A worker that dies loses its leases; another takes its runs over, and a
call it was executing is reported interrupted, never run again silently.

On PostgreSQL workers wake on LISTEN/NOTIFY; on SQLite (one machine) they
look for work every --poll. SIGTERM or Ctrl-C stops a worker gracefully:
the step in flight finishes or is checkpointed, and the run is released.

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
}

func (a *app) workerCmd() *cobra.Command {
	var f workerFlags
	cmd := &cobra.Command{
		Use:   "worker [--agent A] [--concurrency N]",
		Short: "Advance queued and detached-decided runs, until stopped",
		Long:  workerHelp,
		Args:  argsCheck(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.concurrency < 1 {
				return usageErr(fmt.Errorf("--concurrency %d: want 1 or more", f.concurrency))
			}
			if f.logFormat != "text" && f.logFormat != "json" {
				return usageErr(fmt.Errorf("--log-format %q: want text or json", f.logFormat))
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
	cmd.Flags().DurationVar(&f.lease, "lease", 60*time.Second, "how long a run stays held if this worker stops renewing (dies)")
	cmd.Flags().DurationVar(&f.poll, "poll", time.Second, "how often to look for work without a notification (SQLite; a safety net on PostgreSQL)")
	cmd.Flags().BoolVar(&f.exitIdle, "exit-when-idle", false, "exit once no run is queued, decided or running")
	return cmd
}

// waiter blocks until there may be work, or d passes.
type waiter interface {
	Wait(ctx context.Context, d time.Duration) (string, error)
}

// poller is the waiter without notifications: it waits d.
type poller struct{}

func (poller) Wait(ctx context.Context, d time.Duration) (string, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-t.C:
		return "", nil
	}
}

// listen returns a waiter on a channel: LISTEN on PostgreSQL, else a
// poller.
func (a *app) listen(ctx context.Context, channel string) (waiter, func(), error) {
	path, err := dbPath(a.dbPath)
	if err != nil || !postgres.IsURL(path) {
		return poller{}, func() {}, err
	}
	l, err := postgres.Listen(ctx, path, channel)
	if err != nil {
		return nil, nil, err
	}
	return l, func() { l.Close() }, nil
}

func (a *app) work(ctx context.Context, f workerFlags) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	var h slog.Handler = slog.NewTextHandler(a.stderr, nil)
	if f.logFormat == "json" {
		h = slog.NewJSONHandler(a.stderr, nil)
	}
	log := slog.New(h)
	db, err := a.store(ctx)
	if err != nil {
		return err
	}
	e := engine.New(db, engine.Config{Models: model.Default(), LeaseTTL: f.lease})
	a.engines = append(a.engines, e)
	wait, closeWait, err := a.listen(ctx, postgres.ChannelWork)
	if err != nil {
		return err
	}
	defer closeWait()
	host, _ := os.Hostname()
	w := store.Worker{ID: e.Lease().Owner, Host: host, PID: os.Getpid(), Agent: f.agent, Concurrency: f.concurrency,
		Lease: f.lease, Started: time.Now()}
	var done atomic.Int64
	beat := func() {
		w.Done = int(done.Load())
		if err := db.Beat(context.WithoutCancel(ctx), w); err != nil {
			log.Warn("heartbeat failed", "err", err)
		}
	}
	beat()
	log.Info("worker started", "worker", w.ID, "db", db.Path(), "backend", db.Dialect(), "agent", f.agent, "concurrency", f.concurrency)

	// Wake-ups fan out: one goroutine waits on the database, the workers
	// wait on it. Both helpers stop, and are waited for, before the
	// listener closes.
	wake := make(chan struct{}, f.concurrency)
	var busy atomic.Int64
	hctx, stopHelpers := context.WithCancel(ctx)
	var helpers sync.WaitGroup
	defer func() { stopHelpers(); helpers.Wait() }()
	helpers.Add(2)
	go func() {
		defer helpers.Done()
		t := time.NewTicker(f.lease / 3)
		defer t.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-t.C:
				beat()
			}
		}
	}()
	go func() {
		defer helpers.Done()
		for hctx.Err() == nil {
			if _, err := wait.Wait(hctx, f.poll); err != nil {
				if hctx.Err() == nil {
					log.Error("waiting for work failed", "err", err)
					poller{}.Wait(hctx, f.poll)
				}
				continue
			}
			for range f.concurrency {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}
	}()

	var wg sync.WaitGroup
	idle := make(chan struct{})
	var idleOnce sync.Once
	for range f.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				busy.Add(1)
				start := time.Now()
				v, ok, err := e.Work(ctx, f.agent)
				busy.Add(-1)
				var ie *engine.InterruptedError
				switch {
				case errors.As(err, &ie):
					log.Info("run checkpointed on stop", "run", ie.RunID)
					return
				case err != nil:
					log.Error("work failed", "err", err)
				case ok:
					done.Add(1)
					log.Info("run advanced", "run", v.RunID, "agent", v.Agent, "status", v.Status, "took", time.Since(start).Round(time.Millisecond))
					continue
				}
				// Work found nothing this worker may claim: decline what
				// is overdue, which advances its runs.
				if ids, err := e.ExpireAll(ctx, f.agent); err != nil {
					log.Error("expiring overdue calls failed", "err", err)
				} else if len(ids) > 0 {
					done.Add(int64(len(ids)))
					log.Info("overdue calls declined", "runs", ids)
					continue
				}
				// With no run in flight anywhere (one may yet fail over
				// to us), it is idle.
				if f.exitIdle && busy.Load() == 0 && !anyRunning(ctx, db) {
					idleOnce.Do(func() { close(idle) })
					return
				}
				select {
				case <-ctx.Done():
				case <-idle:
					return
				case <-wake:
				}
			}
		}()
	}
	wg.Wait()
	stopHelpers()
	helpers.Wait()
	beat()
	if err := db.Gone(context.WithoutCancel(ctx), w.ID); err != nil {
		log.Warn("unregister failed", "err", err)
	}
	log.Info("worker stopped", "worker", w.ID, "runs", done.Load())
	return nil
}

// anyRunning reports whether some run is running (held by a live process
// that may yet die, or leave work behind).
func anyRunning(ctx context.Context, db store.Store) bool {
	runs, err := db.List(ctx, store.Filter{Status: store.Running, Limit: 1})
	return err != nil || len(runs) > 0
}
