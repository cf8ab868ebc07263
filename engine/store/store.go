// Package store defines how runs are kept: the records (runs, tool calls,
// decisions, spec snapshots) and the Store contract every backend meets.
//
// A run is advanced by at most one process at a time: the holder of its
// lease. Every write that advances a run names the lease and fails with
// ErrLeaseLost when another process holds it. Deciding a call is a single
// conditional transition that any process may attempt; exactly one wins.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Status is a run's status.
type Status string

// Run statuses.
const (
	Running   Status = "running"   // a process is advancing it
	Suspended Status = "suspended" // waiting for a human decision
	Completed Status = "completed"
	Failed    Status = "failed"
)

// Terminal reports whether a run in status s can no longer change.
func (s Status) Terminal() bool { return s == Completed || s == Failed }

// CallStatus is the state of one tool call in the call ledger.
type CallStatus string

// Call statuses. A call moves pending → approved|declined, approved →
// executing → succeeded|failed. A call that needs no decision starts
// approved; one whose arguments are invalid starts failed.
const (
	CallPending   CallStatus = "pending"
	CallApproved  CallStatus = "approved"
	CallDeclined  CallStatus = "declined"
	CallExecuting CallStatus = "executing"
	CallSucceeded CallStatus = "succeeded"
	CallFailed    CallStatus = "failed"
)

// Done reports whether a call in status s has its result.
func (s CallStatus) Done() bool {
	return s == CallDeclined || s == CallSucceeded || s == CallFailed
}

// Kinds of pending call.
const (
	KindApproval = "approval" // waits for approve or decline
)

// Run is one run of an agent.
type Run struct {
	ID        string
	Agent     string
	Status    Status
	Input     string
	Output    string
	Error     string
	SpecHash  string // key of the spec snapshot the run started with
	Step      int    // model turns taken
	State     []byte // the engine's checkpoint, opaque to the store
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Call is one tool call a model made in a run.
type Call struct {
	RunID     string
	ID        string
	Seq       int // order within the run, from 1
	Step      int // the model turn that made it
	Tool      string
	Args      json.RawMessage
	Status    CallStatus
	Kind      string // for pending calls: what they wait for
	Result    string // what the model is told; set once Done
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Decision actions.
const (
	Approve = "approve"
	Decline = "decline"
)

// Decision is a human's decision on a call, kept as an audit record.
type Decision struct {
	RunID  string
	CallID string
	Action string // Approve or Decline
	By     string // on whose behalf (--as), else the OS user
	OSUser string // the OS user who ran the command
	Reason string
	At     time.Time
	// Result is the call's result for a decline: what the model is told.
	Result string
}

// Lease identifies the process advancing a run.
type Lease struct {
	Owner string        // unique per process
	TTL   time.Duration // how long the lease lasts without renewal
}

// Filter selects runs for List. Zero fields match everything.
type Filter struct {
	Status Status
	Agent  string
	Limit  int // 0 means no limit
}

// Store keeps runs durably. Implementations are safe for concurrent use
// by several goroutines and several processes.
type Store interface {
	// CreateRun stores a new run, held by lease, with the spec snapshot it
	// runs on (stored once per distinct hash).
	CreateRun(ctx context.Context, r *Run, spec []byte, lease Lease) error
	// Run returns a run by its full id, or ErrNotFound.
	Run(ctx context.Context, id string) (*Run, error)
	// ResolveID returns the id of the one run whose id starts with prefix:
	// ErrNotFound when none does, an *AmbiguousError when several do.
	ResolveID(ctx context.Context, prefix string) (string, error)
	// List returns runs, newest first.
	List(ctx context.Context, f Filter) ([]*Run, error)
	// Calls returns a run's calls in order.
	Calls(ctx context.Context, runID string) ([]*Call, error)
	// Pending returns the pending calls of the given runs, by run id.
	Pending(ctx context.Context, runIDs []string) (map[string][]*Call, error)
	// Decisions returns a run's decisions in the order they were made.
	Decisions(ctx context.Context, runID string) ([]*Decision, error)
	// Spec returns a spec snapshot by hash.
	Spec(ctx context.Context, hash string) ([]byte, error)

	// Checkpoint saves a run's state, step, status, output and error, and
	// adds new calls, in one transaction. A terminal status releases the
	// lease.
	Checkpoint(ctx context.Context, lease Lease, r *Run, newCalls []*Call) error
	// StartCall moves an approved call to executing. It fails with a
	// *ConflictError when the call is not approved.
	StartCall(ctx context.Context, lease Lease, runID, callID string) error
	// FinishCall records an executing call's outcome.
	FinishCall(ctx context.Context, lease Lease, runID, callID string, status CallStatus, result string) error
	// Suspend marks the run suspended (in r too) and releases the lease,
	// provided the run waits on a pending call and has no approved call
	// to run; it returns ErrNotIdle otherwise (a decision arrived
	// meanwhile).
	Suspend(ctx context.Context, lease Lease, r *Run) error
	// Renew extends the lease on a run.
	Renew(ctx context.Context, lease Lease, runID string) error

	// Decide records a decision on a pending call: the call moves to
	// approved or declined and the decision is kept, in one transaction.
	// When no live process holds the run, the lease is taken for the
	// caller, who must then advance the run; claimed reports that.
	// Deciding a call that is not pending fails with a *ConflictError.
	Decide(ctx context.Context, d *Decision, lease Lease) (claimed bool, err error)

	Close() error
}

// Errors a Store returns.
var (
	ErrNotFound  = errors.New("not found")
	ErrConflict  = errors.New("conflict")
	ErrLeaseLost = errors.New("another process holds the run")
	ErrNotIdle   = errors.New("run has work to do")
)

// AmbiguousError reports a run id prefix that matches several runs.
type AmbiguousError struct {
	Prefix  string
	Matches []string // some of the matching ids
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("run id %q is ambiguous: it matches several runs", e.Prefix)
}

// ConflictError reports a decision or transition on a call that is no
// longer in the state it needs. It matches ErrConflict.
type ConflictError struct {
	RunID  string
	CallID string
	Status CallStatus // the call's status now; empty when there is no such call
	Action string     // the decision taken on it, if any
	By     string     // who took it
	At     time.Time
}

func (e *ConflictError) Error() string {
	switch {
	case e.Status == "":
		return fmt.Sprintf("run %s has no call %s", e.RunID, e.CallID)
	case e.Action != "":
		return fmt.Sprintf("call %s of run %s was already %sd by %s at %s (now %s)",
			e.CallID, e.RunID, e.Action, e.By, e.At.UTC().Format(time.RFC3339), e.Status)
	}
	return fmt.Sprintf("call %s of run %s is %s", e.CallID, e.RunID, e.Status)
}

// NotFoundError reports a missing record. It matches ErrNotFound.
type NotFoundError struct{ What string }

func (e *NotFoundError) Error() string { return e.What }

// Is makes a NotFoundError match ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// Is makes a ConflictError match ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }
