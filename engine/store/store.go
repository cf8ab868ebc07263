// Package store defines how runs are kept: the records (runs, tool calls,
// decisions, spec snapshots) and the Store contract every backend meets.
//
// A run is advanced by at most one process at a time: the holder of its
// lease. Every write that advances a run names the lease and fails with
// ErrLeaseLost when another process holds it. Deciding a call is a single
// conditional transition that any process may attempt; exactly one wins.
package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Status is a run's status.
type Status string

// Run statuses.
const (
	Queued    Status = "queued"    // started detached: waits for a worker
	Running   Status = "running"   // a process is advancing it
	Suspended Status = "suspended" // waiting for a human decision
	Completed Status = "completed"
	Failed    Status = "failed"
	// Stalled: a model call failed (the provider down, a missing key)
	// after the run began. Every result is kept; workers leave the run
	// alone, and agentctl continue asks the model again.
	Stalled Status = "stalled"
)

// Terminal reports whether a run in status s can no longer change.
func (s Status) Terminal() bool { return s == Completed || s == Failed }

// Stopped reports whether no process advances a run in status s until
// someone acts: it finished, or it stalled.
func (s Status) Stopped() bool { return s.Terminal() || s == Stalled }

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
	// CallInterrupted is a call found executing with its process gone:
	// its side effect may or may not have happened, so it is never run
	// again silently; a human retries or resolves it.
	CallInterrupted CallStatus = "interrupted"
)

// Done reports whether a call in status s has its result.
func (s CallStatus) Done() bool {
	return s == CallDeclined || s == CallSucceeded || s == CallFailed
}

// Kind is what a pending call waits for.
type Kind string

// Kinds of pending call.
const (
	KindApproval Kind = "approval" // waits for approve or decline
	KindSuspend  Kind = "suspend"  // the tool paused itself: waits for resume data (or decline)
	// KindDelegation is a call to a sub-agent waiting for its child run;
	// it is settled by the child's outcome, never by a human.
	KindDelegation Kind = "delegation"
	// KindInterrupted is a call interrupted (its process stopped): it waits for
	// retry or resolve.
	KindInterrupted Kind = "interrupted"
)

// Run is one run of an agent.
type Run struct {
	ID        string
	Agent     string
	Status    Status
	Input     string
	Output    string
	Error     string
	SpecHash  string    // key of the spec snapshot the run started with
	Owner     string    // the process holding the lease, if any
	Expires   time.Time // when its lease runs out
	Step      int       // model turns taken
	State     []byte    // the engine's checkpoint, opaque to the store
	CreatedAt time.Time
	UpdatedAt time.Time

	Usage Usage // model calls and tokens so far

	// A child run works for a delegation call of its parent, in a tree
	// whose root a user started. A root run has RootID == ID.
	ParentID   string
	ParentCall string   // the parent's delegation call
	RootID     string   // the root of its tree
	Path       []string // agent names from the root's to its own
	// StartedBy is the OS user who started the run (of a child run: who
	// started its root).
	StartedBy string
	// Request, when set as the run is created, is recorded with it in
	// one transaction: the request that created it (an idempotency key).
	// It is not read back.
	Request *Request
}

// Request identifies a request that changes a run, by an idempotency key
// its client chose: recorded in the transaction of the change, so that a
// client that does not know whether its request took effect (the answer
// was lost) can ask again with the same key and be told. A key is
// remembered for RequestTTL.
type Request struct {
	// Key is the key, made unique to its client (a hash of the client's
	// name and the key it sent).
	Key string
	// Hash is a hash of the request (method, path and body): the same
	// key with another request is not the same request.
	Hash string
}

// RequestTTL is how long a request's key is remembered.
const RequestTTL = 24 * time.Hour

// Requested is a request recorded under its key.
type Requested struct {
	Hash  string
	RunID string // the run it created or decided in
	At    time.Time
}

// Usage counts a run's model calls and tokens, as providers report them.
type Usage struct {
	ModelCalls   int `json:"modelCalls"`
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
}

// Call is one tool call a model made in a run.
type Call struct {
	RunID  string
	ID     string
	Seq    int // order within the run, from 1
	Step   int // the model turn that made it
	Tool   string
	Args   json.RawMessage
	Status CallStatus
	Kind   Kind   // for pending calls: what they wait for
	Result string // what the model is told; set once Done
	// ResultObject reports that Result is a JSON object, the structured
	// result of a toolkit (exec, http); otherwise Result is text.
	ResultObject bool
	// Gate records the approval gate's verdict when the call was made:
	// what required approval, or why none was needed.
	Gate Gate
	// GateError is the requireApproval expression's error, if it failed
	// (the call then required approval: it fails closed).
	GateError    string
	Payload      json.RawMessage // what a suspended call shows; nil otherwise
	ResumeSchema json.RawMessage // what its resume data must satisfy; nil: anything
	Resume       json.RawMessage // the resume data it was given last; nil if none
	Deadline     time.Time       // when a pending call expires; zero: never
	// Needed is how many distinct approvers must approve the call (its
	// tool's approvals, fixed when the call was made); Approvals how many
	// have so far.
	Needed    int
	Approvals int
	CreatedAt time.Time
	UpdatedAt time.Time
	// StartedAt is when the call last moved to executing (a retry starts
	// it again), or a delegation's sub-agent run began; FinishedAt when it
	// then moved to succeeded or failed.
	// Zero when it never ran, or when its end is unknown (interrupted,
	// or resolved by hand).
	StartedAt  time.Time
	FinishedAt time.Time
}

// Action is what a decision does.
type Action string

// Decision actions.
const (
	Approve Action = "approve" // a pending approval: the call may run (Args may be edited)
	Decline Action = "decline" // any pending call: it never runs; the model is told
	Resume  Action = "resume"  // a suspended call: it goes on with Data
	Expire  Action = "expire"  // a pending call past its deadline, declined by agentctl
	Grant   Action = "grant"   // with an approval: later calls of the tool need none
	Retry   Action = "retry"   // an interrupted call: run it again
	Resolve Action = "resolve" // an interrupted call: record its outcome by hand (Result, Status)
	Refused Action = "refused" // an attempt the approver policy refused: only recorded (Reason says why)
)

// Past is the action in the past tense: approved, retried, ...
func (a Action) Past() string {
	switch {
	case strings.HasSuffix(string(a), "y"):
		return strings.TrimSuffix(string(a), "y") + "ied"
	case strings.HasSuffix(string(a), "e"):
		return string(a) + "d"
	}
	return string(a) + "ed"
}

// Decision is a decision on a call, kept as an append-only audit record.
// Escalation is a step of a call's escalation ladder that happened.
type Escalation struct {
	RunID  string
	CallID string
	Step   int    // its place in the ladder, from 1
	Kind   string // remind, addApprovers or decide
	At     time.Time
}

type Decision struct {
	RunID  string
	CallID string
	Action Action
	By     string // on whose behalf (--as), else the OS user
	OSUser string // the OS user who ran the command
	// Via is how the decider was identified: "" on the database itself
	// (the CLI), else the server's way: socket, token, proxy or slack.
	Via        string
	Reason     string
	ArgsBefore json.RawMessage // the call's arguments before the decision
	ArgsAfter  json.RawMessage // after it, when an approval edited them
	Data       json.RawMessage // resume data, for Resume
	At         time.Time
	// Result is the call's result for a decline, expiry or resolve: what
	// the model is told.
	Result string
	// Status is the outcome a resolve records: succeeded or failed.
	Status CallStatus
	// Needed, for an approval, is how many distinct approvers the call
	// needs: while fewer have approved, an approval is recorded and the
	// call stays pending; the same approver twice is refused
	// (*ForbiddenError).
	Needed int
	// Start, on an approval that leaves its call approved and claims the
	// run, also moves the call on to executing, in the same transaction:
	// the approver's process runs it next (the decision and the
	// durable start of the side effect, one commit). Not stored.
	Start bool
	// Request, when set, is recorded in the decision's transaction (the
	// first of a batch that has one): the request that made it.
	Request *Request
	// Escalation, when set, is recorded in the decision's transaction:
	// the step of the call's ladder that made it. Already recorded, the
	// batch fails with a *ConflictError.
	Escalation *Escalation
}

// ForbiddenError reports a decision the approver policy does not allow.
type ForbiddenError struct {
	RunID, CallID string
	Reason        string
}

func (e *ForbiddenError) Error() string {
	if e.CallID == "" {
		return fmt.Sprintf("forbidden: %s", e.Reason)
	}
	return fmt.Sprintf("forbidden: call %s of run %s: %s", e.CallID, e.RunID, e.Reason)
}

// Is makes a *ForbiddenError match ErrForbidden.
func (e *ForbiddenError) Is(target error) bool { return target == ErrForbidden }

// EventType names a kind of event: text-delta, tool-call, tool-result, ...
// (the engine's event types).
type EventType string

// Event is one step of a run as consumers see it (agentctl events).
//
// The store keeps Data, the event's own fields, as given, and its type
// and run in columns of their own; JSON renders the event as consumers
// read it, the envelope (type, runId, path) first.
type Event struct {
	ID    int64 // increasing within a store
	RunID string
	Type  EventType
	Data  json.RawMessage // the event's own fields: a JSON object, without type and runId
	At    time.Time
	// Cursor is where the event stands in commit order, as Feed returns
	// it: a Feed after it resumes with the next event. Empty from Events.
	Cursor string
	// Path names the agents from the root of the run's tree to the run.
	// It is not stored: it is the run's, filled in by whoever hands the
	// event to consumers (the engine, live and from storage).
	Path []string
}

// JSON renders the event as one JSON object: {"type":..., "runId":...,
// "path":[...] when known, then the fields of Data}.
func (e Event) JSON() []byte {
	t, _ := json.Marshal(e.Type)
	r, _ := json.Marshal(e.RunID)
	b := make([]byte, 0, len(t)+len(r)+len(e.Data)+20)
	b = append(append(append(append(b, `{"type":`...), t...), `,"runId":`...), r...)
	if e.Path != nil {
		p, _ := json.Marshal(e.Path)
		b = append(append(b, `,"path":`...), p...)
	}
	if !e.At.IsZero() {
		b = append(append(append(b, `,"at":"`...), e.At.UTC().Format(time.RFC3339Nano)...), '"')
	}
	fields := bytes.TrimSpace(e.Data)
	if len(fields) > 2 && fields[0] == '{' {
		return append(append(b, ','), fields[1:]...)
	}
	return append(b, '}')
}

// TreeRead is a run tree as ReadTree read it.
type TreeRead struct {
	Runs      []*Run
	Calls     []*Call
	Decisions []*Decision
}

// Move is one transition of a call in the ledger.
type Move struct {
	RunID, CallID string
	From, To      CallStatus
	Result        string          // the call's result, when To is Done
	ResultObject  bool            // Result is a JSON object (Call.ResultObject)
	Kind          Kind            // when To is pending: what it waits for
	Payload       json.RawMessage // when To is pending with KindSuspend
	ResumeSchema  json.RawMessage // likewise: what resume data must satisfy
	Deadline      time.Time       // when To is pending: when it expires
	// Gate, when set, replaces the call's gate and clears its count of
	// approvals: a call held for a new decision (a preview that drifted).
	Gate *Gate
}

// Writes are writes that Apply commits together: a process holds back
// what need not be durable yet (a model turn's checkpoint, a new run) and
// commits it with the write that must be (a call's move to executing,
// the run's suspension), one commit instead of several.
type Writes struct {
	// Create are new runs, created first, in order, held by the lease
	// (as CreateRun).
	Create []NewRun
	// Run, when set, is checkpointed next (as Checkpoint), with Calls
	// added to it.
	Run   *Run
	Calls []*Call
	// Moves are call transitions, made next, in order (as MoveCall).
	Moves []Move
	// Suspend, when set, is the run suspended last (as Suspend).
	Suspend *Run
}

// Empty reports whether w writes nothing.
func (w *Writes) Empty() bool {
	return len(w.Create) == 0 && w.Run == nil && len(w.Calls) == 0 && len(w.Moves) == 0 && w.Suspend == nil
}

// NewRun is a run to create, with the spec snapshot it runs on.
type NewRun struct {
	Run  *Run
	Spec []byte
}

// Lease identifies the process advancing a run.
type Lease struct {
	Owner string        // unique per process
	TTL   time.Duration // how long the lease lasts without renewal
}

// Worker is a long-running process advancing runs (agentctl worker).
type Worker struct {
	ID          string // its lease owner
	Host        string
	PID         int
	Agent       string // the agent it is limited to; "" for all
	Concurrency int
	Lease       time.Duration // it beats three times a lease
	Started     time.Time
	Seen        time.Time // its last heartbeat
	Done        int       // runs it has advanced
	// Problems, when not "", says what fails in it as of its last
	// heartbeat (its wait for work), though it still works: degraded.
	Problems string
}

// Alive reports whether the worker has beaten within its lease.
func (w Worker) Alive(now time.Time) bool { return now.Sub(w.Seen) <= w.Lease }

// WorkerAgeOut is how many of its leases a worker that stopped beating
// (killed, or its machine lost) is still listed, as gone; after that,
// reads no longer list it, and the next heartbeat of any worker deletes
// its row.
const WorkerAgeOut = 3

// QueueStatus is the work and the workers of a database.
type QueueStatus struct {
	Workers []Worker
	// Leases is how many runs live processes hold now.
	Leases int
	// Queued is how many runs wait for a worker: queued, decided
	// detached, or left by a process that stopped.
	Queued int
	// OldestPending is when the oldest call still waiting for a human
	// was made; zero when none waits.
	OldestPending time.Time
	// Pending is how many calls wait for a human.
	Pending int
	// Overdue is how many of them are past their deadline (expire
	// declines them).
	Overdue int
}

// Filter selects runs for List. Zero fields match everything.
type Filter struct {
	Status Status
	Agent  string
	Limit  int  // 0 means no limit
	Roots  bool // only runs a user started, not child runs
	// Before is a cursor: only runs listed after the run with this id
	// (the last of the previous page), newest first. An id the store
	// has no run with is ErrBadCursor.
	Before string
}

// Store keeps runs durably. Implementations are safe for concurrent use
// by several goroutines and several processes.
type Store interface {
	// CreateRun stores a new run, held by lease, with the spec snapshot it
	// runs on (stored once per distinct hash). A run created Queued, with
	// a zero lease, waits for a worker (ClaimStart).
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
	// Grants returns the tools whose calls a human approved for the rest
	// of the run (approve --always).
	Grants(ctx context.Context, runID string) ([]string, error)
	// Expired returns the runs that have a pending call whose deadline is
	// before now.
	Expired(ctx context.Context, now time.Time) ([]string, error)
	// Tree returns the runs of the tree rooted at rootID, the root first,
	// then children in creation order. Given the id of a run below a
	// root, it returns that run alone, whose RootID then names the tree;
	// given an id no run has, nothing.
	Tree(ctx context.Context, rootID string) ([]*Run, error)
	// ReadTree returns the tree run id belongs to, in a query for each of
	// its parts: its runs, the root first, then the
	// children in creation order; every call of them, by run id then
	// order within the run; and, with decisions set, every decision made
	// in them, in the order made. A NotFoundError when no run has id.
	ReadTree(ctx context.Context, id string, decisions bool) (*TreeRead, error)
	// TreePending returns the calls waiting for a human anywhere in the
	// tree rooted at rootID (not delegations), in creation order.
	TreePending(ctx context.Context, rootID string) ([]*Call, error)
	// Events returns a run's events after the one with id after, in order.
	Events(ctx context.Context, runID string, after int64) ([]*Event, error)

	// Every write below also appends its events, in the same transaction,
	// and sets the At of each element of the events' slice that has none
	// to the moment it stored them (the caller can hand them on as
	// stored); a given At is kept, to the millisecond.

	// Apply makes several writes of a run lease holds in one
	// transaction, in the order of Writes' fields, all or none: what
	// CreateRun, Checkpoint, MoveCall and Suspend would each commit, with
	// the events appended after them. Only Suspend may fail without
	// undoing the rest: a run that is not idle (see Suspend) is left
	// running, the other writes are committed, and Apply returns
	// ErrNotIdle.
	Apply(ctx context.Context, lease Lease, w Writes, ev ...Event) error
	// Checkpoint saves a run's state, step, status, output, error and usage, and
	// adds new calls, in one transaction. A terminal or stalled status
	// releases the lease.
	Checkpoint(ctx context.Context, lease Lease, r *Run, newCalls []*Call, ev ...Event) error
	// MoveCall makes one transition of a call of a run lease holds. It
	// fails with a *ConflictError when the call is not in m.From.
	MoveCall(ctx context.Context, lease Lease, m Move, ev ...Event) error
	// Suspend marks the run suspended (in r too) and releases the lease,
	// provided the run waits on a pending call and has no approved call
	// to run; it returns ErrNotIdle otherwise (a decision arrived
	// meanwhile).
	Suspend(ctx context.Context, lease Lease, r *Run, ev ...Event) error
	// Settle gives a delegation call its child's outcome: the call moves
	// from pending to m.To with m.Result, and, when no live process holds
	// the run (suspended, running or stalled), the lease is taken for the
	// caller (claimed).
	Settle(ctx context.Context, lease Lease, m Move, ev ...Event) (claimed bool, err error)
	// Takeover takes the lease on a run from owner, a process known to be
	// dead, whatever its expiry. It fails with ErrLeaseLost when another
	// process holds the run.
	Takeover(ctx context.Context, lease Lease, runID, owner string) error
	// Holders returns the distinct owners of the leases on running runs
	// that have not run out, each a process (engine.HolderDead tells
	// whether it died), in no order.
	Holders(ctx context.Context) ([]string, error)
	// Lapse ends at once the leases owner, a process known to be dead,
	// holds on running runs, as if they had run out: a worker claims
	// them next (ClaimStart). It reports how many it ended; a run another
	// process holds by now is left alone.
	Lapse(ctx context.Context, owner string) (int, error)
	// Claim takes the lease on a run in one of the given statuses that no
	// live process holds, and marks it running (a stalled run's error is
	// cleared). It fails with a
	// *StateError otherwise.
	Claim(ctx context.Context, lease Lease, runID string, from ...Status) error
	// Release gives up the lease on a run, leaving its status as it is:
	// an interrupted process lets another continue the run at once.
	Release(ctx context.Context, lease Lease, runID string) error
	// Renew extends the lease on a run.
	Renew(ctx context.Context, lease Lease, runID string) error

	// Decide records decisions on pending calls of one run, all or none,
	// in one transaction: Approve and Resume move a call to approved
	// (with edited args or resume data), Decline and Expire to declined;
	// Grant only adds its record. Approve needs a call waiting for
	// approval, Resume one that suspended itself. When no live process
	// holds the run, the lease is taken for the caller, who must then
	// advance the run; claimed reports that. A call that is not pending
	// (or waits for another kind of decision) fails the whole batch with
	// a *ConflictError.
	//
	// With a zero lease (a detached decision) the run is not claimed but
	// marked as work for a worker. A Request whose key is already
	// recorded fails the batch with ErrRequestSeen.
	Decide(ctx context.Context, ds []*Decision, lease Lease, ev ...Event) (claimed bool, err error)

	// Escalate records that step x of a pending call's escalation
	// ladder happened, with its events, in one transaction: only while
	// the call still waits for approval and the step is not recorded
	// yet. fired reports whether this call recorded it; of several
	// processes, one does. A step that decides the call goes through
	// Decide instead, with Decision.Escalation.
	Escalate(ctx context.Context, x *Escalation, ev ...Event) (fired bool, err error)
	// Escalations returns the steps that happened to the calls of the
	// given runs, by run id, in the order they happened.
	Escalations(ctx context.Context, runIDs []string) (map[string][]*Escalation, error)
	// Regate replaces the gate of a call waiting for approval, provided
	// it still waits and its gate is still old (as EncodeGate stores
	// it): a preview run again. It fails with a *ConflictError
	// otherwise.
	Regate(ctx context.Context, runID, callID string, old, gate Gate, ev ...Event) error
	// AwaitingApproval returns the ids of the runs with a call waiting
	// for approval, in order.
	AwaitingApproval(ctx context.Context) ([]string, error)

	// ClaimStart claims, for lease, one run a worker should advance: a
	// queued run, a suspended run with decided calls (detached
	// decisions), or a running run no live process holds. agent, when
	// set, limits it to runs of trees whose root runs that agent. It
	// returns nil when there is none. Of several workers, each claims a
	// different run. It returns the claimed run's calls too, and starts
	// the call its holder runs first when that needs nothing evaluated
	// first (see Plain; with no plain tools, none is started), all in one
	// transaction: on PostgreSQL one statement, one round trip.
	ClaimStart(ctx context.Context, lease Lease, agent string, plain []Plain) (*Claimed, error)
	// Beat records that a worker is alive, and deletes the workers that
	// aged out (see WorkerAgeOut); Gone that it stopped.
	Beat(ctx context.Context, w Worker) error
	Gone(ctx context.Context, workerID string) error
	// Queue reports the work and the workers (agentctl status): those
	// that have not aged out, alive or gone.
	Queue(ctx context.Context) (*QueueStatus, error)

	Close() error
}
