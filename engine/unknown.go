package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// settleUnknown finds out what a batch of decisions whose COMMIT's
// answer was lost (err, store.ErrOutcomeUnknown) did, by reading the
// run again, for up to half a lease while the database cannot be read:
// committed, the decisions are on record, and the run is claimed when
// this engine's lease holds it (and is then advanced, before the lease
// runs out); not committed, nothing changed (store.ErrUnavailable).
// When no read succeeds, the outcome stays unknown: err.
func (e *Engine) settleUnknown(ctx context.Context, runID string, b batch, lease store.Lease, err error) (claimed bool, _ error) {
	deadline := time.Now().Add(e.lease.TTL / 2)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		claimed, settled, serr := e.settleOnce(ctx, runID, b, lease)
		if settled {
			return claimed, serr
		}
		if time.Now().Add(wait).After(deadline) {
			return false, err
		}
		select {
		case <-ctx.Done():
			return false, err
		case <-time.After(wait):
		}
	}
}

// settleOnce reads once what a lost COMMIT did; settled is false when
// the database cannot be read.
func (e *Engine) settleOnce(ctx context.Context, runID string, b batch, lease store.Lease) (claimed, settled bool, err error) {
	ds, rerr := e.store.Decisions(ctx, runID)
	if rerr != nil {
		e.classify(rerr) // a lost connection: the pool's idle ones go too
		return false, false, nil
	}
	first := b.ds[0]
	for _, d := range ds {
		if d.CallID == first.CallID && d.Action == first.Action && d.By == first.By && d.OSUser == first.OSUser && d.Reason == first.Reason {
			r, rerr := e.store.Run(ctx, runID)
			if rerr != nil {
				return false, false, nil
			}
			return lease.Owner != "" && r.Owner == lease.Owner, true, nil
		}
	}
	return false, true, &lostCommitError{runID: runID}
}

// lostCommitError is a decision whose COMMIT's answer was lost and that,
// read again, did not commit: nothing changed. It matches
// store.ErrUnavailable.
type lostCommitError struct{ runID string }

func (e *lostCommitError) Error() string {
	return fmt.Sprintf("decide on run %s: the connection to the database broke at the commit, which did not take effect: nothing was changed", e.runID)
}

func (e *lostCommitError) Is(target error) bool { return target == store.ErrUnavailable }

// afterCommit words a failure to advance a run after a decision on it
// was committed (a full disk, a lost lease): the decision stands, so the
// error must not say that nothing changed. The run is released, when
// the database lets it, for a worker or continue to take on.
func (e *Engine) afterCommit(ctx context.Context, runID string, d *store.Decision, err error) error {
	var ie *InterruptedError
	if errors.As(err, &ie) || errors.Is(err, store.ErrLeaseLost) {
		return err // checkpointed, or another process goes on
	}
	released := e.store.Release(context.WithoutCancel(ctx), e.lease, runID) == nil
	return &AfterCommitError{RunID: runID, CallID: d.CallID, Action: d.Action, Released: released, Err: err}
}

// AfterCommitError is a run that could not go on after a decision on it
// was committed: the decision stands (it is not "nothing changed"), and
// agentctl continue RUN goes on once the cause is fixed. A call whose
// result could not be stored is then reported interrupted.
type AfterCommitError struct {
	RunID, CallID string
	Action        store.Action
	// Released says the run was released for others to take on; else
	// this process's lease holds it until it expires or its holder is
	// found dead.
	Released bool
	Err      error
}

func (e *AfterCommitError) Error() string {
	return fmt.Sprintf("%s run %s: the decision on %s is recorded, but the run could not go on: %v", e.Action, e.RunID, e.CallID, e.Err)
}

// Unwrap returns the cause.
func (e *AfterCommitError) Unwrap() error { return e.Err }
