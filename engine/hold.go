package engine

import (
	"context"
	"errors"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// A run commits only where durability needs it: before a tool's side
// effect starts (its call executing), after it ends (its result), when
// a sub-agent's run starts, and when the run stops (suspended,
// completed, failed, stalled, or released when interrupted). What comes
// between (a new run, a model turn's answer and the calls it admitted)
// is held by the runner and rides in the next of those commits. A
// process that dies holding writes loses only what no one has seen: a
// model's answer, asked again from the last commit, or a run whose id
// was never shown.

// held is what a runner has written and not yet committed.
type held struct {
	w    store.Writes
	evs  []store.Event
	live int // the leading events of evs, shown live already
	// started is a call the decision or the worker's claim that claimed
	// the run moved on to executing (store.Decision.Start,
	// store.Claimed): the runner runs it first.
	started string
	// calls, when read, are the run's calls as its claim read them
	// (store.Claimed): the runner starts with them.
	calls []*store.Call
	read  bool
}

// hold keeps writes and their events for the runner's next commit; live
// of the events were shown live already.
// Events are held after events only if none was shown live: commit()
// writes rather than hold a second turn's answer.
func (rn *runner) hold(w store.Writes, live int, evs ...store.Event) {
	if len(rn.held.evs) == 0 {
		rn.held.live = live
	}
	rn.held.w = merge(rn.held.w, w)
	rn.held.evs = append(rn.held.evs, evs...)
}

// write commits w, with what the runner holds before it, in one
// transaction, and emits the events not shown yet; live of evs were
// shown live already. A run found not idle on suspension
// (store.ErrNotIdle) has the rest committed.
func (rn *runner) write(ctx context.Context, w store.Writes, live int, evs ...store.Event) error {
	h := rn.held
	rn.held = held{}
	all := append(append(make([]store.Event, 0, len(h.evs)+len(evs)), h.evs...), evs...)
	err := rn.e.applyAgain(ctx, merge(h.w, w), all)
	if err != nil && !errors.Is(err, store.ErrNotIdle) {
		return err
	}
	show := append(all[h.live:len(h.evs):len(h.evs)], all[len(h.evs)+live:]...)
	rn.e.emit(show)
	return err
}

// flush commits what the runner holds, if anything.
func (rn *runner) flush(ctx context.Context) error {
	if rn.held.w.Empty() && len(rn.held.evs) == 0 {
		return nil
	}
	return rn.write(ctx, store.Writes{}, 0)
}

// startable is the call of a decision batch on suspended run r that the
// approver's process will run first, whose decision may therefore start
// it (store.Decision.Start): the approved call of the run's latest turn
// with the lowest sequence number, when it is a plain tool, with no
// suspend or skip condition that could keep it from running; nil for
// none.
func startable(a *agentNode, r *store.Run, calls []*store.Call, ds []*store.Decision) *store.Decision {
	if r.Status != store.Suspended {
		return nil
	}
	var first *store.Call
	var dec *store.Decision
	for _, d := range ds {
		if d.Action != store.Approve {
			continue
		}
		for _, c := range calls {
			if c.ID == d.CallID && c.Step == r.Step && (first == nil || c.Seq < first.Seq) {
				first, dec = c, d
			}
		}
	}
	if first == nil {
		return nil
	}
	if !a.plain(first.Tool) {
		return nil
	}
	return dec
}

// merge is a's writes followed by b's.
func merge(a, b store.Writes) store.Writes {
	out := store.Writes{
		Create:  append(append([]store.NewRun(nil), a.Create...), b.Create...),
		Run:     a.Run,
		Calls:   append(append([]*store.Call(nil), a.Calls...), b.Calls...),
		Moves:   append(append([]store.Move(nil), a.Moves...), b.Moves...),
		Suspend: a.Suspend,
	}
	if b.Run != nil {
		out.Run = b.Run
	}
	if b.Suspend != nil {
		out.Suspend = b.Suspend
	}
	return out
}

// applyAgain is apply, asked again while the database cannot be reached
// (a restart, a dropped connection: nothing was changed), for up to half
// a lease: a result already had is not lost to a brief outage. A lease
// lost meanwhile ends it, as any other failure does.
func (e *Engine) applyAgain(ctx context.Context, w store.Writes, evs []store.Event) error {
	deadline := time.Now().Add(e.lease.TTL / 2)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		err := e.apply(ctx, w, evs)
		if err == nil || !errors.Is(e.classify(err), store.ErrCannotConnect) || time.Now().Add(wait).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// apply commits w with the store's narrowest write for it: one move, one
// checkpoint or one suspension alone, as before; several together in one
// Apply.
func (e *Engine) apply(ctx context.Context, w store.Writes, evs []store.Event) error {
	s, l := e.store, e.lease
	switch {
	case len(w.Create) > 0:
	case w.Run != nil && len(w.Moves) == 0 && w.Suspend == nil:
		return s.Checkpoint(ctx, l, w.Run, w.Calls, evs...)
	case w.Run == nil && len(w.Calls) == 0 && len(w.Moves) == 1 && w.Suspend == nil:
		return s.MoveCall(ctx, l, w.Moves[0], evs...)
	case w.Run == nil && len(w.Calls) == 0 && len(w.Moves) == 0 && w.Suspend != nil:
		return s.Suspend(ctx, l, w.Suspend, evs...)
	}
	return s.Apply(ctx, l, w, evs...)
}
