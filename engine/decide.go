package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// Decision is a human's decision on a pending call.
type Decision struct {
	RunID  string // full run id
	CallID string // empty: the run's only pending call
	Action string // store.Approve or store.Decline
	By     string // on whose behalf; default OSUser
	OSUser string // who ran the command
	Reason string
}

// Decide records a decision and, unless another process is advancing the
// run, continues the run in this process until it completes, fails or
// waits for a human again. Of several processes deciding the same call,
// exactly one succeeds; the others get a *store.ConflictError.
func (e *Engine) Decide(ctx context.Context, d Decision) (*RunView, error) {
	r, err := e.store.Run(ctx, d.RunID)
	if err != nil {
		return nil, err
	}
	pending, err := e.store.Pending(ctx, []string{r.ID})
	if err != nil {
		return nil, err
	}
	calls := pending[r.ID]
	if d.CallID == "" {
		switch len(calls) {
		case 0:
			msg := fmt.Sprintf("run %s is %s and has no call waiting for a decision", r.ID, r.Status)
			if ds, err := e.store.Decisions(ctx, r.ID); err == nil && len(ds) > 0 {
				last := ds[len(ds)-1]
				msg += fmt.Sprintf("; call %s was already %sd by %s at %s", last.CallID, last.Action, last.By, last.At.Format(time.RFC3339))
			}
			return nil, conflictf("%s", msg)
		case 1:
			d.CallID = calls[0].ID
		default:
			ids := make([]string, len(calls))
			for i, c := range calls {
				ids[i] = c.ID + " (" + c.Tool + ")"
			}
			return nil, usagef("run %s has %d pending calls; choose one with --call: %s",
				r.ID, len(calls), strings.Join(ids, ", "))
		}
	}
	// Compile the run's spec before deciding, so that a run this process
	// cannot continue is not taken from others.
	g, err := e.graph(ctx, r.SpecHash)
	if err != nil {
		return nil, fmt.Errorf("%s run %s: %w", d.Action, r.ID, err)
	}
	if d.By == "" {
		d.By = d.OSUser
	}
	rec := &store.Decision{RunID: r.ID, CallID: d.CallID, Action: d.Action, By: d.By, OSUser: d.OSUser, Reason: d.Reason}
	if d.Action == store.Decline {
		rec.Result = declined(d.By, d.Reason)
	}
	claimed, err := e.store.Decide(ctx, rec, e.lease)
	if err != nil {
		return nil, err
	}
	if !claimed {
		// Another process holds the run and will see the decision.
		return e.Inspect(ctx, r.ID)
	}
	r.Status = store.Running
	return e.advance(ctx, g, r)
}

// declined is the tool result a model receives for a declined call.
func declined(by, reason string) string {
	if reason == "" {
		reason = "none given"
	}
	return fmt.Sprintf("The tool call was declined by a human (%s) and was not executed. Reason: %s. "+
		"Do not retry this call unless the user asks you to.", by, reason)
}
