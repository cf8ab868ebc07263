package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/backend"
	"github.com/agentctl/agentctl/notify"
	"github.com/agentctl/agentctl/outbox"
	"github.com/agentctl/agentctl/server"
	"github.com/agentctl/agentctl/server/sse"
)

// transitions are the commands that may make the transitions
// notifications report; the process tries to deliver what they queued
// once before it exits (notifyOnce).
var transitions = []string{"run", "approve", "decline", "resume", "retry", "resolve", "send", "continue", "expire"}

// outboxOptions are what every outbox of this process shares: the
// store, the descriptions of calls from the engine, the environment,
// and who delivers.
func outboxOptions(db store.ServerStore, e *engine.Engine, log *slog.Logger) outbox.Options {
	return outbox.Options{
		Store:     db,
		Describe:  describeCall(e),
		Secrets:   e.Secrets,
		PublicURL: os.Getenv("AGENTCTL_PUBLIC_URL"),
		Env:       os.LookupEnv,
		Owner:     e.Holder(),
		Dead:      engine.HolderDead,
		Log:       log,
	}
}

// specOutbox is the outbox of the runs' own notify: targets.
func specOutbox(o outbox.Options, e *engine.Engine) *outbox.Outbox {
	o.Source, o.Targets = store.SourceSpec, e.Notify
	return outbox.New(o)
}

// describeCall says who may decide a call and why it waits.
func describeCall(e *engine.Engine) func(ctx context.Context, r *store.Run, c *store.Call, m *notify.Call) error {
	return func(ctx context.Context, r *store.Run, c *store.Call, m *notify.Call) error {
		who, err := e.Deciders(ctx, r, c)
		if err != nil {
			return err
		}
		if lists := who.Lists(); len(lists) > 0 {
			m.Approvers, m.AlsoApprovers = lists[0], lists[1:]
		}
		switch {
		case c.Kind == store.KindSuspend:
			m.Why = "the tool suspended itself and waits for resume data"
		case !c.Gate.Zero():
			m.Why = c.Gate.Phrase()
		}
		if c.GateError != "" {
			m.Why += " (" + c.GateError + ")"
		}
		up, act, err := e.Uploaded(ctx, r, c)
		if err != nil || up == nil {
			return err
		}
		m.Upload = &notify.Upload{By: up.By, Digest: up.Digest}
		if act != nil {
			m.Action, _ = json.Marshal(act)
			m.Will = act.Line()
		}
		return nil
	}
}

// notifyOnce is the last thing a command that made transitions does,
// on a database (a server delivers its own), when a spec of its runs
// declares notify targets: it queues the notifications of what was
// committed and tries each once, briefly. One
// not delivered is left for agentctl serve, a worker or notifications
// deliver, and said on stderr; the command's outcome stands either way.
func (a *app) notifyOnce(ctx context.Context, command string) {
	if a.db == nil || a.remote != nil || a.dbOpts.ReadOnly || a.dbOpts.Inspect || !slices.Contains(transitions, command) {
		return
	}
	e := a.lastEngine() // its compiled specs are the runs' it made
	if e == nil || !e.Notifies() {
		return // nothing this command did is notified: no extra work on its path
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	o := outboxOptions(a.db, e, nil)
	o.Timeout = 3 * time.Second
	b := specOutbox(o, e)
	ids, err := b.Queue(ctx)
	if err != nil {
		fmt.Fprintf(a.stderr, "agentctl: note: notifications not queued: %s\n", oneLine(err.Error(), 300))
		return
	}
	if len(ids) == 0 {
		return
	}
	res, _ := b.Deliver(ctx, ids) // a deadline cuts it short: what was not tried stays pending
	if n := len(ids) - res.Delivered; n > 0 {
		fmt.Fprintf(a.stderr, "agentctl: note: %d of %d %s not delivered (agentctl notifications shows why; a worker, agentctl serve or agentctl notifications deliver tries again)\n",
			n, len(ids), plural(len(ids), "notification", "notifications"))
	}
}

// notifyPoll is how often a serving outbox looks for due retries and,
// on SQLite, for new events.
const notifyPoll = 500 * time.Millisecond

// serveOutboxes delivers the notifications of the runs' notify: targets
// and of the configuration's, woken with the event streams, until the
// server stops (a.stop) or ctx ends; the function returned stops them
// and waits for them.
func (a *app) serveOutboxes(ctx context.Context, ss store.ServerStore, e *engine.Engine, cfg *server.Config, log *slog.Logger, n *sse.Notifier) func() {
	ctx, cancel := context.WithCancel(ctx)
	o := outboxOptions(ss, e, log)
	if cfg.PublicURL != "" {
		o.PublicURL = cfg.PublicURL
	}
	o.Describe = withServerApprovers(o.Describe, cfg.Approvers)
	if sa, err := slackAppOf(cfg); err == nil && sa != nil { // serve has read it before
		o.Bot, o.SecretNames = sa.bot, sa.names
	}
	boxes := []*outbox.Outbox{specOutbox(o, e)}
	if len(cfg.Notify) > 0 {
		o.Source = store.SourceServer
		o.Targets = func(context.Context, *store.Run) ([]notify.Target, error) { return cfg.Notify, nil }
		boxes = append(boxes, outbox.New(o))
	}
	wait := func(ctx context.Context, d time.Duration) error {
		wctx, stop := context.WithTimeout(ctx, d)
		defer stop()
		n.Wait(wctx)
		return ctx.Err()
	}
	for _, b := range boxes {
		// Before the server takes requests: what they commit is queued.
		if err := b.Start(ctx); err != nil {
			log.Warn("notifications: the outbox's cursor", "error", err.Error())
		}
	}
	var wg sync.WaitGroup
	for _, b := range boxes {
		wg.Go(func() { b.Run(ctx, wait, notifyPoll) })
	}
	go func() {
		select {
		case <-a.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	return func() { cancel(); wg.Wait() }
}

// workerOutbox delivers the runs' notify: targets while a worker runs,
// woken by the database's event notifications (PostgreSQL) or every
// notifyPoll; the function returned stops it and waits for it.
func (a *app) workerOutbox(ctx context.Context, db store.ServerStore, e *engine.Engine, log *slog.Logger) (func(), error) {
	wait, stopWait, err := a.wakeups(ctx, backend.ChannelEvents)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	b := specOutbox(outboxOptions(db, e, log), e)
	if err := b.Start(ctx); err != nil { // before the worker claims: what it commits is queued
		log.Warn("notifications: the outbox's cursor", "error", err.Error())
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer stopWait()
		b.Run(ctx, wait, notifyPoll)
	})
	go func() {
		select {
		case <-a.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	return func() {
		cancel()
		wg.Wait()
		select {
		case <-a.stop:
		default: // idle (--exit-when-idle): what the last runs queued is tried once
			fctx, done := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
			defer done()
			if _, err := b.Queue(fctx); err == nil {
				b.Deliver(fctx, nil)
			}
		}
	}, nil
}

// lastEngine is the engine the command made last, if any.
func (a *app) lastEngine() *engine.Engine {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.engines) == 0 {
		return nil
	}
	return a.engines[len(a.engines)-1]
}

// withServerApprovers says who may decide a call whose spec names no
// approvers: the server's approvers role.
func withServerApprovers(describe func(context.Context, *store.Run, *store.Call, *notify.Call) error, approvers []string) func(context.Context, *store.Run, *store.Call, *notify.Call) error {
	return func(ctx context.Context, r *store.Run, c *store.Call, m *notify.Call) error {
		if err := describe(ctx, r, c, m); err != nil {
			return err
		}
		if len(m.Approvers) == 0 {
			m.Approvers = slices.Clone(approvers)
		}
		return nil
	}
}

// existingDB refuses to make a database for a command that only works
// on one that exists (a cron line with a wrong path must not create an
// empty file and report that all is sent).
func (a *app) existingDB() error {
	path, err := dbPath(a.dbPath)
	if err != nil || backend.IsPostgres(path) {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("%w: database %s does not exist (check --db or $AGENTCTL_DB)", store.ErrCannotWrite, path)
	}
	return nil
}
