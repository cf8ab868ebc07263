package store

import (
	"errors"
	"fmt"
	"time"
)

// Errors a Store returns.
var (
	ErrNotFound  = errors.New("not found")
	ErrConflict  = errors.New("conflict")
	ErrLeaseLost = errors.New("another process holds the run")
	ErrNotIdle   = errors.New("run has work to do")
	// ErrForbidden: the approver policy does not allow the decision.
	ErrForbidden = errors.New("forbidden")
	// ErrRequestSeen: a change carried an idempotency key already
	// recorded (store.Request); nothing was changed. It matches
	// ErrConflict.
	ErrRequestSeen error = &requestSeen{}
	// ErrOutcomeUnknown: the connection to the database broke after the
	// transaction's COMMIT was sent; it may or may not have taken
	// effect. Read the state again before doing it again.
	ErrOutcomeUnknown = errors.New("the database's answer to the commit was lost: the change may or may not have been made")

	// ErrUnavailable: the database cannot be used; nothing was changed.
	// Each of the errors below is also ErrUnavailable.
	ErrUnavailable = errors.New("database unavailable")
	// ErrBusy: another process held the write lock beyond the busy timeout.
	ErrBusy error = &unavailable{"database busy"}
	// ErrNewerSchema: the database was written by a newer agentctl.
	ErrNewerSchema error = &unavailable{"database schema is newer than this agentctl"}
	// ErrCorrupt: the file is not a database, or is damaged.
	ErrCorrupt error = &unavailable{"database corrupt"}
	// ErrCannotWrite: the database or its directory cannot be written.
	ErrCannotWrite error = &unavailable{"cannot write the database"}
	// ErrCannotConnect: the database server cannot be reached, or
	// refuses the connection (authentication, TLS, no such database).
	ErrCannotConnect error = &unavailable{"cannot connect to the database"}
	// ErrDenied: the database refuses the role an action it lacks the
	// privilege for.
	ErrDenied error = &unavailable{"the database refused the role"}
	// ErrOldSchema: a database opened only to read was written by an
	// older agentctl and needs its schema upgraded first.
	ErrOldSchema error = &unavailable{"database schema is older than this agentctl"}
)

type unavailable struct{ msg string }

type requestSeen struct{}

func (*requestSeen) Error() string        { return "a request with this idempotency key was already made" }
func (*requestSeen) Is(target error) bool { return target == ErrConflict }

// BusyError is ErrBusy with how long the write waited for another
// process's lock (SQLite's busy timeout): a front end can say how to wait
// longer.
type BusyError struct{ Waited time.Duration }

func (e *BusyError) Error() string { return ErrBusy.Error() }

// Is makes a BusyError match ErrBusy and ErrUnavailable.
func (e *BusyError) Is(target error) bool { return target == ErrBusy || target == ErrUnavailable }

func (e *unavailable) Error() string        { return e.msg }
func (e *unavailable) Is(target error) bool { return target == ErrUnavailable }

// AmbiguousError reports a run id prefix that matches several runs.
type AmbiguousError struct {
	Prefix  string
	Matches []string // some of the matching ids
	What    string   // what the ids are of: "" for runs, "notification"
}

func (e *AmbiguousError) Error() string {
	if e.What != "" {
		return fmt.Sprintf("%s id %q is ambiguous: it matches several", e.What, e.Prefix)
	}
	return fmt.Sprintf("run id %q is ambiguous: it matches several runs", e.Prefix)
}

// ConflictError reports a decision or transition on a call that is no
// longer in the state it needs. It matches ErrConflict.
type ConflictError struct {
	RunID  string
	CallID string
	Status CallStatus // the call's status now; empty when there is no such call
	Kind   Kind       // for a pending call: what it waits for
	Action Action     // the decision taken on it, if any
	By     string     // who took it
	At     time.Time
}

func (e *ConflictError) Error() string {
	switch {
	case e.Status == "":
		return fmt.Sprintf("run %s has no call %s", e.RunID, e.CallID)
	case e.Status == CallPending && e.Kind == KindSuspend:
		return fmt.Sprintf("call %s of run %s suspended itself and waits for resume data", e.CallID, e.RunID)
	case e.Status == CallPending && e.Kind == KindApproval:
		return fmt.Sprintf("call %s of run %s waits for approval, not resume data", e.CallID, e.RunID)
	case e.Action != "" && e.Action.Past() == string(e.Status):
		return fmt.Sprintf("call %s of run %s was already %s by %s at %s",
			e.CallID, e.RunID, e.Action.Past(), e.By, e.At.UTC().Format(time.RFC3339))
	case e.Action != "":
		return fmt.Sprintf("call %s of run %s was already %s by %s at %s (now %s)",
			e.CallID, e.RunID, e.Action.Past(), e.By, e.At.UTC().Format(time.RFC3339), e.Status)
	}
	return fmt.Sprintf("call %s of run %s does not wait for a decision (status: %s)", e.CallID, e.RunID, e.Status)
}

// StateError reports a run not in a status an operation needs. It
// matches ErrConflict.
type StateError struct {
	RunID  string
	Status Status
	Want   []Status
}

func (e *StateError) Error() string {
	return fmt.Sprintf("run %s is %s", e.RunID, e.Status)
}

// Is makes a StateError match ErrConflict.
func (e *StateError) Is(target error) bool { return target == ErrConflict }

// NotFoundError reports a missing record. It matches ErrNotFound.
type NotFoundError struct{ What string }

func (e *NotFoundError) Error() string { return e.What }

// Is makes a NotFoundError match ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// Is makes a ConflictError match ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }
