package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/engine/store"
)

// Errors the engine returns, besides the store's. The typed ones below
// carry what a front end (the CLI, a server) needs to phrase its own
// message and hint; their Error text names no command or flag.
var (
	// ErrUsage marks a request that cannot be carried out as asked: an
	// unknown agent, a missing call id where several are pending.
	ErrUsage = errors.New("invalid request")
	// ErrMaxSteps reports a run that used up its agent's maxSteps.
	ErrMaxSteps = errors.New("maximum steps reached")
	// errStopped ends a run's loop between steps once the engine is asked
	// to stop (Config.Stop); the run is released like an interrupted one.
	errStopped = errors.New("stopping")
	// ErrOneCall reports edited arguments or resume data given for
	// several calls at once. It matches ErrUsage.
	ErrOneCall error = &requestError{kind: ErrUsage, msg: "edited arguments and resume data apply to one call"}
)

// requestError is an error that matches a sentinel without repeating its
// text.
type requestError struct {
	kind error
	msg  string
}

func (e *requestError) Error() string        { return e.msg }
func (e *requestError) Is(target error) bool { return target == e.kind }

func usagef(format string, args ...any) error {
	return &requestError{kind: ErrUsage, msg: fmt.Sprintf(format, args...)}
}

func conflictf(format string, args ...any) error {
	return &requestError{kind: store.ErrConflict, msg: fmt.Sprintf(format, args...)}
}

// UnknownError reports a name the spec does not declare. It matches
// ErrUsage.
type UnknownError struct {
	What  string // agent or model
	Name  string
	Known []string // what the spec declares, sorted
}

func (e *UnknownError) Error() string {
	known := strings.Join(e.Known, ", ")
	if known == "" {
		known = "none"
	}
	return fmt.Sprintf("unknown %s %q (%ss: %s)", e.What, e.Name, e.What, known)
}

// Is makes an *UnknownError match ErrUsage.
func (e *UnknownError) Is(target error) bool { return target == ErrUsage }

// InterruptedError reports a run left as checkpointed because the
// process was interrupted.
type InterruptedError struct{ RunID string }

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("interrupted: run %s is checkpointed", e.RunID)
}

// NotReadyError reports a run that cannot be continued: nothing is left
// for a process to do without a human. It matches store.ErrConflict.
type NotReadyError struct {
	RunID  string
	Status store.Status
}

func (e *NotReadyError) Error() string {
	return fmt.Sprintf("run %s is %s: nothing to continue without a human", e.RunID, e.Status)
}

// Is makes a *NotReadyError match store.ErrConflict.
func (e *NotReadyError) Is(target error) bool { return target == store.ErrConflict }

// ChooseError reports a decision that names no call while several wait
// for it. It matches ErrUsage.
type ChooseError struct {
	RunID   string
	Kind    store.Kind // what they wait for; "" for any decision
	Waiting []*store.Call
}

func (e *ChooseError) Error() string {
	return fmt.Sprintf("run %s has %d calls waiting for %s: name one", e.RunID, len(e.Waiting), WaitsFor(e.Kind))
}

// Is makes a *ChooseError match ErrUsage.
func (e *ChooseError) Is(target error) bool { return target == ErrUsage }

// CallAmbiguousError reports a call id that names several calls waiting
// in a run's tree (call_5 for call_1/call_5 and call_2/call_5). It
// matches ErrUsage.
type CallAmbiguousError struct {
	RunID, CallID string
	Waiting       []*store.Call
}

func (e *CallAmbiguousError) Error() string {
	ids := make([]string, len(e.Waiting))
	for i, c := range e.Waiting {
		ids[i] = c.ID
	}
	return fmt.Sprintf("call %s is ambiguous in run %s: it names %s; name one in full with --call",
		e.CallID, e.RunID, strings.Join(ids, ", "))
}

// Is makes a *CallAmbiguousError match ErrUsage.
func (e *CallAmbiguousError) Is(target error) bool { return target == ErrUsage }

// WaitsFor names what calls of a kind wait for: approval, resume data,
// retry or resolve, or (for any kind) a decision.
func WaitsFor(k store.Kind) string {
	switch k {
	case store.KindApproval:
		return "approval"
	case store.KindSuspend:
		return "resume data"
	case store.KindInterrupted:
		return "retry or resolve"
	}
	return "a decision"
}

// WrongCallError reports a decision on a call that waits for another
// kind of decision. It matches ErrUsage.
type WrongCallError struct {
	RunID, CallID string
	Status        store.CallStatus
	Kind          store.Kind // what the call waits for
	Want          store.Kind // what the decision decides
	// Instead, for a delegation, are the calls of its sub-agents that
	// wait for a human.
	Instead []*store.Call
	// ResumeSchema is a suspended call's: what resume data must satisfy.
	ResumeSchema json.RawMessage
}

func (e *WrongCallError) Error() string {
	switch {
	case e.Status == store.CallInterrupted:
		return fmt.Sprintf("call %s of run %s was interrupted (its process stopped) and may or may not have taken effect", e.CallID, e.RunID)
	case e.Kind == store.KindDelegation:
		return fmt.Sprintf("call %s of run %s is a delegation waiting for its sub-agent", e.CallID, e.RunID)
	}
	return fmt.Sprintf("call %s of run %s waits for %s, not %s", e.CallID, e.RunID, WaitsFor(e.Kind), WaitsFor(e.Want))
}

// Is makes a *WrongCallError match ErrUsage.
func (e *WrongCallError) Is(target error) bool { return target == ErrUsage }

// Input fields a decision may carry.
const (
	InputArgs   = "args"   // edited arguments of an approval
	InputData   = "data"   // resume data
	InputReason = "reason" // the reason, which a tool's requireReason asks of every decision
)

// Problems with a decision's input.
const (
	ProblemMissing    = "missing"    // none given
	ProblemNotJSON    = "not JSON"   // Err says why
	ProblemNotObject  = "not object" // valid JSON, not an object
	ProblemNoTool     = "no tool"    // the agent has no such tool
	ProblemViolations = "violations" // Err lists them, one per line
)

// InputError reports edited arguments or resume data that cannot be
// used; nothing was written. It matches ErrUsage.
type InputError struct {
	Field   string // InputArgs, InputData or InputReason
	CallID  string
	Tool    string
	Problem string // Problem...
	Err     error
	// Violations, with ProblemViolations, lists where the input breaks
	// the schema (pointers into the args or data).
	Violations []Violation
}

func (e *InputError) Error() string {
	msg := fmt.Sprintf("%s for call %s (%s): %s", e.Field, e.CallID, e.Tool, e.Problem)
	if e.Err != nil {
		msg += ": " + strings.TrimSpace(e.Err.Error())
	}
	return msg
}

// Is makes an *InputError match ErrUsage.
func (e *InputError) Is(target error) bool { return target == ErrUsage }

// Unwrap returns what broke the input.
func (e *InputError) Unwrap() error { return e.Err }

// classify maps a driver's failure to the store's sentinels, when the
// store can (sqlstore.DB.Classify); else it returns err.
func (e *Engine) classify(err error) error {
	if c, ok := e.store.(interface{ Classify(error) error }); ok {
		return c.Classify(err)
	}
	return err
}
