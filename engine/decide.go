package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// Decision is a human's decision on pending calls of a run.
type Decision struct {
	RunID  string       // full run id
	CallID string       // the call; empty: the run's only call waiting for this kind of decision
	All    bool         // every call waiting for this kind of decision
	Action store.Action // approve, decline, resume, retry or resolve
	By     string       // on whose behalf; default OSUser
	OSUser string       // who ran the command
	Reason string
	// Args, for an approval, replaces the call's arguments (validated
	// against the tool's input schema first).
	Args json.RawMessage
	// Always, for an approval, also approves every later call of the same
	// tool in this run.
	Always bool
	// Preview, for an approval, is the digest of the preview the
	// approver saw ("sha256:..."): when the call's preview is another
	// now, nothing is decided (*PreviewChangedError).
	Preview string
	// Data, for a resume, is the resume data (validated against the
	// tool's resumeSchema first).
	Data json.RawMessage
	// Output, for a resolve, is the interrupted call's result as a human
	// found it; Failed records it as a failure.
	Output string
	Failed bool
	// Detach records the decision and returns: a worker advances the
	// run (agentctl worker).
	Detach bool
	// Auth is what a server knows of the decider (agentctl serve); nil
	// on the CLI.
	Auth *Authority
	// Recorded, when set, is called once the decision is committed,
	// before the run advances: a server answers from then on.
	Recorded func()
	// NoView says the caller reads the run itself afterwards: Decide
	// then reads nothing to return a view of it and may return nil.
	NoView bool
	// Request, when set, is recorded with the decision, in its
	// transaction: the request that made it (an idempotency key). A key
	// already recorded fails the decision with store.ErrRequestSeen.
	Request *store.Request
	// Unknown, when set, is called when the answer to the decision's
	// COMMIT is lost (the connection broke), before Decide asks the
	// database what it did, for up to half a lease: a server answers
	// outcome_unknown then, rather than wait.
	Unknown func()
	// escalated are the escalation steps that happened in the run's
	// tree, read once the tree is touched: addApprovers widen the policy.
	escalated []*store.Escalation
}

// kind is the kind of pending call an action decides; "" for any.
func kind(action store.Action) store.Kind {
	switch action {
	case store.Approve:
		return store.KindApproval
	case store.Resume:
		return store.KindSuspend
	case store.Retry, store.Resolve:
		return store.KindInterrupted
	}
	return ""
}

// Decide records a decision and, unless another process is advancing the
// run, continues the run in this process until it completes, fails or
// waits for a human again. Input is checked before anything is written:
// edited arguments and resume data that break their schema are refused
// with ErrUsage and leave the run exactly as it was. Of several processes
// deciding the same call, exactly one succeeds; the others get a
// *store.ConflictError.
func (e *Engine) Decide(ctx context.Context, d Decision) (v *RunView, err error) {
	if err := e.checkBy(d.By); err != nil {
		return nil, err
	}
	r, t, err := e.touch(ctx, d.RunID)
	if err != nil {
		return nil, err
	}
	targets, err := e.targets(ctx, t, d)
	if err != nil {
		return nil, err
	}
	ctx, span := e.startDecision(ctx, t.root, targets, d)
	defer func() { endDecision(span, err) }()
	// Compile the run's spec before deciding, so that a run this process
	// cannot continue is not taken from others.
	g, err := e.graph(ctx, r.SpecHash)
	if err != nil {
		return nil, fmt.Errorf("%s run %s: %w", d.Action, r.ID, err)
	}
	if !d.Detach {
		// This process will advance the run: what its model turns need
		// must be at hand, or the decision is not recorded.
		if err := e.ready(g, t.root); err != nil {
			return nil, usagef("%s run %s: %v: nothing was recorded (--detach leaves the run to a worker)", d.Action, r.ID, err)
		}
	} else if st, err := decodeState(t.root); err == nil && st.Replay != "" {
		return nil, usagef("%s run %s: it replays %s, and a worker has no cassette: decide it without --detach, with --replay: nothing was recorded", d.Action, r.ID, st.Replay)
	}
	if d.By == "" {
		d.By = d.OSUser
	}
	if err := needReason(g, t, targets, d); err != nil {
		return nil, err
	}
	if g.escalating() { // no ladder, no step to read
		if d.escalated, err = e.firedIn(ctx, t); err != nil {
			return nil, err
		}
	}
	if err := previewSeen(targets, d); err != nil {
		return nil, err
	}
	// The approver policy of the run's spec snapshot, for every call
	// before any is decided: a refused attempt is recorded and changes
	// nothing else.
	for _, runID := range runsOf(targets) {
		mine := callsOf(targets, runID)
		for _, c := range mine {
			if why := e.check(g, t.runs[runID], t.root.StartedBy, c, d); why != "" {
				return nil, e.refuse(ctx, t.runs[runID], mine, d, why)
			}
			if why, err := e.previewRefusal(ctx, g, t.runs[runID], c, d); err != nil || why != "" {
				if err != nil {
					return nil, err
				}
				return nil, e.refuse(ctx, t.runs[runID], mine, d, why)
			}
		}
	}
	runs := runsOf(targets)
	for i, runID := range runs {
		di := d
		if i < len(runs)-1 {
			di.Recorded = nil // said once, when the last batch is committed
		}
		if v, err = e.decideRun(ctx, g, t.runs[runID], callsOf(targets, runID), di); err != nil {
			return nil, err
		}
	}
	if len(t.order) == 1 || d.NoView {
		return v, nil // a lone run: record's view is the root's
	}
	return e.Inspect(ctx, t.root.ID)
}

// needReason refuses, before anything is written, an approval, decline
// or resume without a reason on a call whose tool asks every decision
// for one (requireReason): on every channel, as each decides here.
func needReason(g *Graph, t *tree, calls []*store.Call, d Decision) error {
	if strings.TrimSpace(d.Reason) != "" || d.Action != store.Approve && d.Action != store.Decline && d.Action != store.Resume {
		return nil
	}
	for _, c := range calls {
		a, ok := g.agents[t.runs[c.RunID].Agent]
		if !ok {
			continue
		}
		if tool := a.decl(c.Tool); tool != nil && tool.RequireReason {
			return &InputError{Field: InputReason, CallID: c.ID, Tool: c.Tool, Problem: ProblemMissing,
				Err: errors.New("its tool's requireReason asks every decision on its calls for one; nothing was recorded")}
		}
	}
	return nil
}

// targets picks the calls a decision is about among those of the run it
// names and of the runs below it: call ids are unique in a tree, and the
// root is where a human sees them all; a child's id names its own calls.
// A call no longer waiting is explained by the decision taken on it.
func (e *Engine) targets(ctx context.Context, t *tree, d Decision) ([]*store.Call, error) {
	r := t.runs[d.RunID]
	if r == nil {
		r = t.root
	}
	mine := slices.DeleteFunc(slices.Clone(t.calls), func(c *store.Call) bool { return !t.under(c.RunID, r.ID) })
	if d.CallID != "" {
		id, err := callNamed(r, mine, d.CallID)
		if err != nil {
			return nil, err
		}
		d.CallID = id
	}
	targets, err := choose(r, mine, d)
	var stale *staleError
	switch {
	case errors.As(err, &stale) && stale.call == nil:
		return nil, e.nothingWaiting(ctx, t, r, stale.what)
	case errors.As(err, &stale):
		return nil, e.conflict(ctx, stale.call)
	}
	return targets, err
}

// callsOf returns the calls that belong to one run.
func callsOf(calls []*store.Call, runID string) []*store.Call {
	var out []*store.Call
	for _, c := range calls {
		if c.RunID == runID {
			out = append(out, c)
		}
	}
	return out
}

// decideRun records a decision on calls of one run, checked first
// (edited arguments, resume data), and advances the run when that leaves
// this process holding it.
func (e *Engine) decideRun(ctx context.Context, g *Graph, run *store.Run, calls []*store.Call, d Decision) (*RunView, error) {
	a, ok := g.agents[run.Agent]
	if !ok {
		return nil, fmt.Errorf("run %s: agent %q is not in the run's spec", run.ID, run.Agent)
	}
	var b batch
	b.detach, b.recorded, b.noView, b.unknown = d.Detach, d.Recorded, d.NoView, d.Unknown
	for _, c := range calls {
		rec, ev, err := e.decision(ctx, run, a, c, d)
		if err != nil {
			return nil, err
		}
		b.ds = append(b.ds, rec)
		b.evs = append(b.evs, decisionEvent(run, c, rec))
		if ev != nil {
			b.evs = append(b.evs, *ev)
		}
		if d.Always {
			grant := &store.Decision{RunID: run.ID, CallID: c.ID, Action: store.Grant, By: d.By, OSUser: d.OSUser, Via: d.Auth.via(), Reason: d.Reason,
				Request: d.Request}
			b.ds = append(b.ds, grant)
			b.evs = append(b.evs, decisionEvent(run, c, grant))
		}
	}
	if !d.Detach {
		if s := startable(a, run, calls, b.ds); s != nil {
			s.Start, b.started = true, s.CallID
		}
	}
	v, err := e.record(ctx, g, run, b)
	var fe *store.ForbiddenError
	if errors.As(err, &fe) {
		// Refused in the store (the same approver twice): record it.
		var mine []*store.Call
		for _, c := range calls {
			if c.ID == fe.CallID {
				mine = append(mine, c)
			}
		}
		return nil, e.refuse(ctx, run, mine, d, fe.Reason)
	}
	return v, err
}

// decision is the record of a decision on one call, with the event that
// reports its result when it has one (decline, resolve); c is a call of
// run, whose agent is a.
func (e *Engine) decision(ctx context.Context, run *store.Run, a *agentNode, c *store.Call, d Decision) (*store.Decision, *store.Event, error) {
	rec := &store.Decision{RunID: c.RunID, CallID: c.ID, Action: d.Action, By: d.By, OSUser: d.OSUser, Via: d.Auth.via(), Reason: d.Reason,
		ArgsBefore: c.Args, Needed: c.Needed, Request: d.Request}
	var err error
	switch d.Action {
	case store.Approve:
		if d.Args != nil {
			rec.ArgsAfter, err = checkArgs(ctx, a, c, d.Args)
		}
		if p := c.Gate.Preview; p != nil { // the preview approved: engine/previewcheck.go
			rec.Data, _ = json.Marshal(approvalData{Preview: p.Digest})
		}
		return rec, nil, err
	case store.Resume:
		rec.Data, err = checkResume(a, c, d.Data)
		return rec, nil, err
	case store.Decline:
		rec.Result = declined(d.By, d.Reason)
	case store.Resolve:
		rec.Status, rec.Result = store.CallSucceeded, d.Output
		if d.Failed {
			rec.Status = store.CallFailed
		}
	default:
		return rec, nil, nil
	}
	done := *c
	done.Status, done.Result = rec.Status, rec.Result
	if d.Action == store.Decline {
		done.Status = store.CallDeclined
	}
	ev := resultEvent(run, &done)
	return rec, &ev, nil
}

// batch is decisions on calls of one run, recorded together, with the
// events that report them; detach leaves the run to a worker.
type batch struct {
	ds       []*store.Decision
	evs      []store.Event
	detach   bool
	recorded func() // called once the batch is committed
	unknown  func() // called when the COMMIT's answer is lost
	noView   bool   // the caller needs no view of the run
	started  string // the call the decision starts when it claims the run
}

// record stores decisions and, when this process thereby holds the run,
// advances it, handing a finished child's outcome up its tree.
func (e *Engine) record(ctx context.Context, g *Graph, r *store.Run, b batch) (*RunView, error) {
	lease := e.lease
	if b.detach {
		lease = store.Lease{} // leave the run to a worker
	}
	claimed, err := e.store.Decide(ctx, b.ds, lease, b.evs...)
	if errors.Is(err, store.ErrOutcomeUnknown) {
		if b.unknown != nil {
			b.unknown()
		}
		claimed, err = e.settleUnknown(ctx, r.ID, b, lease, err)
	}
	if err != nil {
		return nil, err
	}
	e.emit(b.evs)
	if b.recorded != nil {
		b.recorded()
	}
	if !claimed {
		// Another process holds the run and will see the decision.
		if b.noView {
			return nil, nil
		}
		return e.Inspect(ctx, r.ID)
	}
	r.Status = store.Running
	v, err := e.advanceTreeHeld(ctx, g, r, held{started: b.started})
	if err != nil {
		return v, e.afterCommit(ctx, r.ID, b.ds[0], err)
	}
	return v, nil
}

// choose picks the calls a decision is about.
func choose(r *store.Run, calls []*store.Call, d Decision) ([]*store.Call, error) {
	k := kind(d.Action)
	var waiting []*store.Call
	for _, c := range calls {
		if k == store.KindInterrupted && c.Status == store.CallInterrupted ||
			k != store.KindInterrupted && c.Status == store.CallPending && c.Kind != store.KindDelegation && (k == "" || c.Kind == k) {
			waiting = append(waiting, c)
		}
	}
	what := WaitsFor(k)
	if d.CallID != "" {
		i := slices.IndexFunc(calls, func(c *store.Call) bool { return c.ID == d.CallID })
		switch {
		case i >= 0 && slices.Contains(waiting, calls[i]):
			return []*store.Call{calls[i]}, nil
		case i < 0:
			return nil, &store.ConflictError{RunID: r.ID, CallID: d.CallID}
		case calls[i].Status == store.CallInterrupted || calls[i].Status == store.CallPending:
			c := calls[i]
			we := &WrongCallError{RunID: c.RunID, CallID: c.ID, Status: c.Status, Kind: c.Kind, Want: k, ResumeSchema: c.ResumeSchema}
			if c.Kind == store.KindDelegation {
				for _, w := range calls {
					if strings.HasPrefix(w.ID, c.ID+"/") && w.Kind != store.KindDelegation &&
						(w.Status == store.CallPending || w.Status == store.CallInterrupted) {
						we.Instead = append(we.Instead, w)
					}
				}
			}
			return nil, we
		case calls[i].Status != store.CallPending:
			return nil, &staleError{call: calls[i]}
		}
		return []*store.Call{calls[i]}, nil
	}
	switch {
	case len(waiting) == 0:
		// Nothing waits for this decision: say what does, if anything.
		for _, c := range calls {
			if waitsForHuman(c) {
				return nil, &WrongCallError{RunID: c.RunID, CallID: c.ID, Status: c.Status, Kind: c.Kind, Want: k, ResumeSchema: c.ResumeSchema}
			}
		}
		return nil, &staleError{what: what}
	case d.All || len(waiting) == 1:
		if len(waiting) > 1 && (d.Args != nil || d.Data != nil) {
			return nil, ErrOneCall
		}
		return waiting, nil
	}
	return nil, &ChooseError{RunID: r.ID, Kind: k, Waiting: waiting}
}

// callNamed resolves the call id a decision names among the calls of a
// run and of the runs below it: a full id (call_1/call_5) of a call
// still pending, else the last part of the id of exactly one call
// waiting for a human (call_5).
func callNamed(r *store.Run, calls []*store.Call, id string) (string, error) {
	var named []*store.Call
	for _, c := range calls {
		if c.ID == id && (c.Status == store.CallPending || c.Status == store.CallInterrupted) {
			return id, nil // a delegation too: choose says whose calls to decide
		}
		if waitsForHuman(c) && strings.HasSuffix(c.ID, "/"+id) {
			named = append(named, c)
		}
	}
	switch {
	case len(named) == 1:
		return named[0].ID, nil
	case len(named) > 1:
		return "", &CallAmbiguousError{RunID: r.ID, CallID: id, Waiting: named}
	}
	return id, nil // a call that waits for no human: choose says why
}

// waitsForHuman reports whether a call waits for a human decision.
func waitsForHuman(c *store.Call) bool {
	return c.Status == store.CallInterrupted || c.Status == store.CallPending && c.Kind != store.KindDelegation
}

// staleError marks a decision on a call that is no longer pending, or,
// without a call, on a run with no call waiting for what.
type staleError struct {
	call *store.Call
	what string
}

func (e *staleError) Error() string { return "stale decision" }

// nothingWaiting explains a decision on a run with no call waiting for it,
// naming the last decision taken in the run.
func (e *Engine) nothingWaiting(ctx context.Context, t *tree, r *store.Run, what string) error {
	msg := fmt.Sprintf("run %s is %s and has no call waiting for %s", r.ID, r.Status, what)
	ds, err := e.treeDecisions(ctx, t, r.ID)
	if err != nil {
		return err
	}
	for _, d := range slices.Backward(ds) {
		if d.Action != store.Grant {
			msg += fmt.Sprintf("; call %s was already %s by %s at %s", d.CallID, d.Action.Past(), d.By, d.At.Format(time.RFC3339))
			break
		}
	}
	return conflictf("%s", msg)
}

// conflict explains why a call cannot be decided: its status and the last
// decision taken on it.
func (e *Engine) conflict(ctx context.Context, c *store.Call) error {
	ce := &store.ConflictError{RunID: c.RunID, CallID: c.ID, Status: c.Status, Kind: c.Kind}
	ds, err := e.store.Decisions(ctx, c.RunID)
	if err != nil {
		return err
	}
	for _, d := range slices.Backward(ds) {
		if d.CallID == c.ID && d.Action != store.Grant {
			ce.Action, ce.By, ce.At = d.Action, d.By, d.At
			break
		}
	}
	return ce
}

// checkArgs validates edited arguments against the tool's input schema.
func checkArgs(ctx context.Context, a *agentNode, c *store.Call, raw json.RawMessage) (json.RawMessage, error) {
	bad := func(problem string, err error) error { return inputError(InputArgs, c, problem, err) }
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil || args == nil {
		return nil, bad(ProblemNotObject, nil)
	}
	t, err := a.tool(ctx, c.Tool)
	switch {
	case err != nil:
		return nil, fmt.Errorf("args for call %s: %w", c.ID, err)
	case t == nil:
		return nil, bad(ProblemNoTool, nil)
	}
	if err := t.tool.Input().Validate(args); err != nil {
		return nil, bad(ProblemViolations, err)
	}
	return json.Marshal(args)
}

// checkResume validates resume data against the tool's resumeSchema.
func checkResume(a *agentNode, c *store.Call, raw json.RawMessage) (json.RawMessage, error) {
	bad := func(problem string, err error) error { return inputError(InputData, c, problem, err) }
	var data any
	if raw == nil {
		return nil, bad(ProblemMissing, nil)
	}
	if err := json.Unmarshal(raw, &data); err != nil {
		return nil, bad(ProblemNotJSON, err)
	}
	if _, ok := data.(map[string]any); !ok {
		return nil, bad(ProblemNotObject, nil)
	}
	if t := a.decl(c.Tool); t != nil {
		if err := t.ResumeSchema.Validate(data); err != nil {
			return nil, bad(ProblemViolations, err)
		}
	}
	return json.Marshal(data)
}

// inputError reports field of call c as unusable; a schema validation
// error becomes its list of violations, worded for users.
func inputError(field string, c *store.Call, problem string, err error) *InputError {
	ie := &InputError{Field: field, CallID: c.ID, Tool: c.Tool, Problem: problem, Err: err}
	if ie.Violations = violationsOf(err); ie.Violations != nil {
		ie.Err = describeViolations(ie.Violations)
	}
	return ie
}

// declined is the tool result a model receives for a declined call.
func declined(by, reason string) string {
	if reason == "" {
		reason = "none given"
	}
	who := "a human (" + by + ")"
	if by == Actor { // an escalation ladder's decide step: no human decided
		who = "agentctl (its escalation policy: nobody decided in time)"
	}
	return fmt.Sprintf("The tool call was declined by %s and was not executed. Reason: %s. "+
		"Do not retry this call unless the user asks you to.", who, reason)
}

// expired is the tool result a model receives for a call nobody decided
// in time.
func expired(deadline time.Time) string {
	return fmt.Sprintf("The tool call was not decided before its deadline (%s) and was not executed. "+
		"Do not retry this call unless the user asks you to.", deadline.UTC().Format(time.RFC3339))
}
