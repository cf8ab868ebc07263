package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/internal/health"
)

// PoolOptions configure a worker pool (agentctl worker). Zero fields take
// defaults.
type PoolOptions struct {
	// Agent, when set, limits the pool to trees whose root runs it.
	Agent string
	// Concurrency is how many runs it advances at once; default 1.
	Concurrency int
	// Poll is how long it waits for work without a wake-up; default 1s.
	Poll time.Duration
	// ExitWhenIdle ends the pool once nothing is queued, decided,
	// overdue or running that it may take.
	ExitWhenIdle bool
	// Wait blocks until there may be work (a notification) or d passes;
	// nil waits d. An error is logged and waiting goes on by polling.
	Wait func(ctx context.Context, d time.Duration) error
	// Log receives one record per event; default: discarded.
	Log *slog.Logger
	// Where are attributes that say where the pool works (the
	// database), added to its "worker started" record.
	Where []any
}

// pool is one running worker pool.
type pool struct {
	e    *Engine
	opts PoolOptions
	log  *slog.Logger
	rec  store.Worker
	done atomic.Int64 // runs advanced
	busy atomic.Int64 // workers inside Work

	wake     chan struct{}
	idle     chan struct{}
	idleOnce sync.Once
	judge    judge // tells which lease holders are dead (adopt)

	// While the database cannot be used, each of these says so once,
	// not once a poll.
	workDown, expireDown, beatDown, adoptDown *health.Outage

	// waitDown, when set, says since when and why waiting for work fails
	// (a *string): the heartbeat reports the worker degraded.
	waitDown atomic.Pointer[string]
}

// Serve advances runs left for a worker until ctx is done, the engine is
// asked to stop (Config.Stop: SIGTERM) or, with ExitWhenIdle, nothing is
// left: queued runs, runs decided with --detach, runs whose process
// stopped (at once when it is provably dead, see adopt, else when its
// lease runs out), and overdue calls, which it declines. It registers as a
// worker, beats while it lives, and reports how many runs it advanced.
// Asked to stop, it lets the step in flight finish; when ctx ends, the
// step is cut short. Either way its run is checkpointed and released.
func (e *Engine) Serve(ctx context.Context, opts PoolOptions) (int, error) {
	p := e.newPool(opts)
	opts = p.opts
	p.beat(ctx)
	p.log.Info("worker started", append(append([]any{"worker", p.rec.ID}, opts.Where...), "agent", opts.Agent, "concurrency", opts.Concurrency)...)

	// Heartbeats, wake-ups and the adoption of dead holders' runs run
	// beside the workers and are stopped, and waited for, before Serve
	// returns.
	hctx, stopHelpers := context.WithCancel(ctx)
	var helpers sync.WaitGroup
	helpers.Add(3)
	go func() { defer helpers.Done(); p.beating(hctx) }()
	go func() { defer helpers.Done(); p.waking(hctx) }()
	go func() { defer helpers.Done(); p.adopting(hctx) }()
	var wg sync.WaitGroup
	for range opts.Concurrency {
		wg.Add(1)
		go func() { defer wg.Done(); p.work(ctx) }()
	}
	wg.Wait()
	stopHelpers()
	helpers.Wait()
	p.beat(ctx)
	if err := e.store.Gone(context.WithoutCancel(ctx), p.rec.ID); err != nil {
		p.log.Warn("unregister failed", "err", err)
	}
	n := int(p.done.Load())
	p.log.Info("worker stopped", "worker", p.rec.ID, "runs", n)
	return n, nil
}

// newPool makes the pool Serve runs, opts with their defaults.
func (e *Engine) newPool(opts PoolOptions) *pool {
	if opts.Concurrency < 1 {
		opts.Concurrency = 1
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	host, _ := os.Hostname()
	p := &pool{e: e, opts: opts, log: opts.Log,
		rec: store.Worker{ID: e.lease.Owner, Host: host, PID: os.Getpid(), Agent: opts.Agent,
			Concurrency: opts.Concurrency, Lease: e.lease.TTL, Started: e.now()},
		wake: make(chan struct{}, opts.Concurrency), idle: make(chan struct{}), judge: newJudge()}
	outage := func(what string) *health.Outage {
		return &health.Outage{Log: opts.Log, What: what, Classify: e.classify}
	}
	p.workDown, p.expireDown, p.beatDown = outage("work"), outage("expiring overdue calls"), outage("heartbeat")
	p.adoptDown = outage("taking over the runs of dead lease holders")
	return p
}

// beat records that the worker is alive.
func (p *pool) beat(ctx context.Context) {
	p.rec.Done = int(p.done.Load())
	p.rec.Problems = ""
	if why := p.waitDown.Load(); why != nil {
		p.rec.Problems = *why
	}
	if err := p.e.store.Beat(context.WithoutCancel(ctx), p.rec); err != nil {
		p.beatDown.Failed(slog.LevelWarn, err)
	} else {
		p.beatDown.Worked()
	}
}

// beating beats three times a lease until ctx is done.
func (p *pool) beating(ctx context.Context) { every(ctx, p.e.lease.TTL/3, func() { p.beat(ctx) }) }

// waking fans wake-ups out to the workers: one goroutine waits on the
// database, the workers wait on it. While the wait fails (the database
// restarted, the connection dropped) the workers are woken each poll
// instead, and it says so once, and once again when waiting works again.
func (p *pool) waking(ctx context.Context) {
	var down error
	var since time.Time
	for ctx.Err() == nil {
		if p.opts.Wait == nil {
			sleep(ctx, p.opts.Poll)
		} else if began, err := time.Now(), p.opts.Wait(ctx, p.opts.Poll); err != nil {
			if ctx.Err() != nil {
				return
			}
			retry := min(p.opts.Poll, time.Second)
			if down == nil {
				since = time.Now()
				p.log.Error("waiting for work failed; looking for work every "+retry.String()+" until it works again", "err", err)
				why := fmt.Sprintf("waiting for work fails since %s (%v); it looks for work every %s meanwhile",
					time.Now().UTC().Format(time.RFC3339), err, retry)
				p.waitDown.Store(&why)
			}
			down = err
			sleep(ctx, retry-time.Since(began)) // the wait may have waited already
		} else if down != nil {
			p.log.Info("waiting for work works again", "after", time.Since(since).Round(time.Millisecond).String(), "err", down.Error())
			down = nil
			p.waitDown.Store(nil)
		}
		for range p.opts.Concurrency {
			select {
			case p.wake <- struct{}{}:
			default:
			}
		}
	}
}

// work is one worker: it advances what it can claim, declines what is
// overdue, and otherwise waits for a wake-up.
func (p *pool) work(ctx context.Context) {
	for ctx.Err() == nil && !p.e.stopping() {
		if p.advance(ctx) {
			continue
		}
		if ctx.Err() != nil || p.e.stopping() {
			return
		}
		// Nothing this worker may claim: decline what is overdue, which
		// advances its runs.
		sw, err := p.e.ExpireAll(ctx, p.opts.Agent)
		ids := sw.Runs()
		if err != nil && ctx.Err() == nil {
			p.expireDown.Failed(slog.LevelError, err)
		} else if err == nil {
			p.expireDown.Worked()
		}
		if len(ids) > 0 {
			p.done.Add(int64(len(ids)))
			p.log.Info("overdue calls declined", "runs", ids)
			continue
		}
		// With no run in flight anywhere (one may yet fail over to us),
		// it is idle.
		if p.opts.ExitWhenIdle && p.busy.Load() == 0 && !p.anyRunning(ctx) {
			p.idleOnce.Do(func() { close(p.idle) })
			return
		}
		select {
		case <-ctx.Done():
		case <-p.e.stop:
		case <-p.idle:
			return
		case <-p.wake:
		}
	}
}

// advance claims one run and advances it; it reports whether there was
// one.
func (p *pool) advance(ctx context.Context) bool {
	p.busy.Add(1)
	start := time.Now()
	v, ok, err := p.e.Work(ctx, p.opts.Agent)
	p.busy.Add(-1)
	var ie *InterruptedError
	if err == nil {
		p.workDown.Worked()
	}
	switch {
	case errors.As(err, &ie):
		p.log.Info("run checkpointed on stop", "run", ie.RunID)
		return false
	case err != nil:
		if ctx.Err() == nil {
			p.workDown.Failed(slog.LevelError, err)
		}
		return false
	case ok:
		p.done.Add(1)
		p.log.Info("run advanced", "run", v.RunID, "agent", v.Agent, "status", v.Status, "seconds", time.Since(start).Round(time.Microsecond).Seconds())
	}
	return ok
}

// anyRunning reports whether some run is running (held by a live process
// that may yet die, or leave work behind).
func (p *pool) anyRunning(ctx context.Context) bool {
	runs, err := p.e.store.List(ctx, store.Filter{Status: store.Running, Limit: 1})
	return err != nil || len(runs) > 0
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
