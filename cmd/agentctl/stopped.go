package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/engine/store"
)

// stopped reports a command stopped by SIGTERM or Ctrl-C (an
// engine.InterruptedError) as its run now stands. A run whose call's
// tool was killed waits for a human: it prints as any suspended run,
// with its hints, and exits 3. A run checkpointed between steps is
// named, its hint with its short id as every hint's. false: err is no
// such stop, or it prints as any other error.
func (a *app) stopped(err error) (int, bool) {
	var ie *engine.InterruptedError
	e := a.lastEngine()
	if !errors.As(err, &ie) || e == nil {
		return 0, false
	}
	ctx := context.Background()
	short := ie.RunID
	if s, err := e.ShortID(ctx, ie.RunID); err == nil {
		short = s
	}
	v, verr := e.Inspect(ctx, ie.RunID)
	if verr == nil && v.Status == store.Running && a.subInterrupted(ctx, e, ie.RunID) {
		// A sub-agent's call was interrupted: the sub-run rests
		// suspended; its root, stopped meanwhile, is brought to rest
		// too (it only records that it waits), by an engine the stop
		// does not stop.
		rest := engine.New(a.db, engine.Config{Models: model.Default(), Limits: a.limits.engineLimits()})
		defer rest.Close()
		if rv, err := rest.Continue(ctx, ie.RunID); err == nil {
			v = rv
		}
	}
	if verr != nil || v.Status != store.Suspended {
		if a.errJSON {
			return 0, false
		}
		fmt.Fprintf(a.stderr, "agentctl: %v; continue it with %s continue %s\n", ie, a.hintCmd(), short)
		return exitError, true
	}
	fmt.Fprintln(a.stderr, "agentctl: interrupted: a tool was stopped before it finished; the run waits for a human to retry or resolve its call")
	f := format("text")
	if a.errJSON {
		f = "json"
	}
	printRun(a.stdout, a.stderr, f, v, a.hintTo(short))
	return exitSuspended, true
}

// subInterrupted reports whether a sub-run of the tree of root rests
// suspended with a call interrupted.
func (a *app) subInterrupted(ctx context.Context, e *engine.Engine, root string) bool {
	runs, err := e.Tree(ctx, root)
	if err != nil {
		return false
	}
	for _, r := range runs {
		if r.Depth == 0 || r.Status != store.Suspended {
			continue
		}
		for _, p := range r.Pending {
			if p.Kind == store.KindInterrupted && p.RunID == r.RunID {
				return true
			}
		}
	}
	return false
}

// warnNoWorker says, on stderr, that no worker (agentctl worker, or
// serve's pool) of this database is alive to advance run v, which a
// detached command left for one, and what to start: else it would wait
// without a word. Through a server, its own workers advance it.
func (a *app) warnNoWorker(v *engine.RunView) {
	if a.remote != nil || a.db == nil || v.Status.Terminal() {
		return
	}
	q, err := a.db.Queue(context.Background())
	if err != nil {
		return
	}
	now := time.Now()
	for _, w := range q.Workers {
		if w.Alive(now) && !engine.HolderDead(w.ID) && (w.Agent == "" || w.Agent == v.Agent) {
			return
		}
	}
	fmt.Fprintf(a.stderr, "agentctl: note: no worker for agent %s is alive on this database: start one with %s worker (agentctl serve runs workers too)\n",
		v.Agent, a.hintCmd())
}
