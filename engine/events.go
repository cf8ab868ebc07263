package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// Event types, as in agentctl's --events output and `agentctl events`.
const (
	EventTextDelta         store.EventType = "text-delta"          // TextDelta
	EventToolCall          store.EventType = "tool-call"           // ToolCallEvent
	EventToolCallApproval  store.EventType = "tool-call-approval"  // ToolCallApproval
	EventToolCallSuspended store.EventType = "tool-call-suspended" // ToolCallSuspended
	EventToolResult        store.EventType = "tool-result"         // ToolResult
	EventStepFinish        store.EventType = "step-finish"         // StepFinish
	EventFinish            store.EventType = "finish"              // Finish
	EventError             store.EventType = "error"               // ErrorEvent
	EventStalled           store.EventType = "stalled"             // StalledEvent
	EventDecision          store.EventType = "decision"            // DecisionEvent
	EventEscalated         store.EventType = "escalated"           // EscalatedEvent
	EventRuleMatched       store.EventType = "rule-matched"        // RuleEvent: a policy rule decided a call
	EventRuleShadow        store.EventType = "rule-shadow"         // RuleEvent: a shadow rule matched, not enforced
	EventPreviewDrift      store.EventType = "preview-drift"       // PreviewDriftEvent: a call's preview changed after its approval; it waits again
)

// The fields of each event type, as stored in store.Event.Data. Fields
// are in name order, as consumers have always read them.
type (
	// TextDelta is text from the model.
	TextDelta struct {
		Text string `json:"text"`
	}
	// ToolCallEvent reports that the model called a tool.
	ToolCallEvent struct {
		Args   json.RawMessage `json:"args"`
		CallID string          `json:"callId"`
		Tool   string          `json:"tool"`
	}
	// ToolCallApproval reports a call that waits for approval.
	ToolCallApproval struct {
		Args      json.RawMessage `json:"args"`
		CallID    string          `json:"callId"`
		Deadline  *time.Time      `json:"deadline,omitempty"`
		Gate      store.Gate      `json:"gate"`
		GateError string          `json:"gateError,omitempty"`
		Tool      string          `json:"tool"`
	}
	// ToolCallSuspended reports a call that suspended itself.
	ToolCallSuspended struct {
		Args         json.RawMessage `json:"args"`
		CallID       string          `json:"callId"`
		Payload      json.RawMessage `json:"payload"`
		ResumeSchema map[string]any  `json:"resumeSchema,omitempty"`
		Tool         string          `json:"tool"`
	}
	// ToolResult reports a call's result: a JSON object for a
	// toolkit's structured result (exec, http), a string otherwise
	// (ResultJSON).
	ToolResult struct {
		CallID string           `json:"callId"`
		Result json.RawMessage  `json:"result"`
		Status store.CallStatus `json:"status"`
		Tool   string           `json:"tool"`
	}
	// StepFinish reports the end of a model turn.
	StepFinish struct {
		FinishReason string `json:"finishReason"` // tool-calls or stop
		// Latency is how long the model took to answer, in seconds.
		Latency float64 `json:"latencySeconds"`
		Step    int     `json:"step"`
	}
	// Finish reports that the run completed.
	Finish struct {
		Output string `json:"output"`
	}
	// ErrorEvent reports that the run failed.
	ErrorEvent struct {
		Error string `json:"error"`
	}
	// StalledEvent reports that the run stalled: its model could not be
	// asked; agentctl continue asks again.
	StalledEvent struct {
		Error string `json:"error"`
	}
	// DecisionEvent reports a decision on a call, as the audit trail
	// records it: what (approve, decline, resume, expire, grant, retry,
	// resolve, or refused: an attempt the policy refused), on whose
	// behalf (by), by which OS user, and why.
	DecisionEvent struct {
		Action    store.Action    `json:"action"`
		ArgsAfter json.RawMessage `json:"argsAfter,omitempty"` // an approval's edited arguments
		By        string          `json:"by"`
		CallID    string          `json:"callId"`
		Data      json.RawMessage `json:"data,omitempty"` // a resume's data
		OSUser    string          `json:"osUser"`
		Reason    string          `json:"reason,omitempty"`
		Tool      string          `json:"tool"`
	}
)

// payload is the fields of one event type.
type payload interface{ eventType() store.EventType }

func (TextDelta) eventType() store.EventType         { return EventTextDelta }
func (ToolCallEvent) eventType() store.EventType     { return EventToolCall }
func (ToolCallApproval) eventType() store.EventType  { return EventToolCallApproval }
func (ToolCallSuspended) eventType() store.EventType { return EventToolCallSuspended }
func (ToolResult) eventType() store.EventType        { return EventToolResult }
func (StepFinish) eventType() store.EventType        { return EventStepFinish }
func (Finish) eventType() store.EventType            { return EventFinish }
func (ErrorEvent) eventType() store.EventType        { return EventError }
func (StalledEvent) eventType() store.EventType      { return EventStalled }
func (DecisionEvent) eventType() store.EventType     { return EventDecision }

// event builds run r's event from its fields: it carries the run's id
// and path.
func event(r *store.Run, p payload) store.Event {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		panic(err) // strings, numbers, times and JSON already valid: cannot fail
	}
	return store.Event{RunID: r.ID, Path: r.Path, Type: p.eventType(), Data: bytes.TrimRight(b.Bytes(), "\n")}
}

// emit hands committed events to the Config.OnEvent hook.
func (e *Engine) emit(evs []store.Event) {
	if e.onEvent == nil {
		return
	}
	e.emitMu.Lock()
	defer e.emitMu.Unlock()
	for _, ev := range evs {
		if ev.At.IsZero() {
			ev.At = e.now().Truncate(time.Millisecond) // as the store keeps it
		}
		e.onEvent(ev)
	}
}

// streamTo returns the callback that streams a model's text to the
// OnEvent hook as live text-delta events, or nil without a hook; first
// is set to when the first was emitted (the stored text-delta's at).
func (e *Engine) streamTo(r *store.Run, first *time.Time) func(string) {
	if e.onEvent == nil {
		return nil
	}
	return func(chunk string) {
		ev := event(r, TextDelta{Text: chunk})
		ev.At = e.now().Truncate(time.Millisecond)
		if first.IsZero() {
			*first = ev.At
		}
		e.emit([]store.Event{ev})
	}
}

// resultEvent reports the result of run r's call c.
func resultEvent(r *store.Run, c *store.Call) store.Event {
	return event(r, ToolResult{CallID: c.ID, Tool: c.Tool, Status: c.Status, Result: ResultJSON(c.Result, c.ResultObject)})
}

// ResultJSON is a call's result as users and scripts see it (show -o
// json, events): the object itself when it is a JSON object, otherwise
// the text as a JSON string.
func ResultJSON(result string, object bool) json.RawMessage {
	if object && json.Valid([]byte(result)) {
		return json.RawMessage(result)
	}
	b, _ := json.Marshal(result) // a string: cannot fail
	return b
}

// decisionEvent reports decision d on call c of run r.
func decisionEvent(r *store.Run, c *store.Call, d *store.Decision) store.Event {
	return event(r, DecisionEvent{Action: d.Action, ArgsAfter: d.ArgsAfter, By: d.By, CallID: d.CallID, Data: d.Data,
		OSUser: d.OSUser, Reason: d.Reason, Tool: c.Tool})
}

// Events returns the events of a run and of every run below it in its
// tree (a root's: the whole tree's) after the one with id after, in the
// order they were stored, each with its run's id and path, exactly as a
// live stream (Config.OnEvent) shows them; and whether the run has ended.
// The status is read first: a run that has ended has all its events, and
// its sub-runs theirs, stored, so a follower that sees done has seen them
// all.
func (e *Engine) Events(ctx context.Context, runID string, after int64) ([]*store.Event, bool, error) {
	r, err := e.store.Run(ctx, runID)
	if err != nil {
		return nil, false, err
	}
	runs := []*store.Run{r}
	if tr, err := e.store.Tree(ctx, r.RootID); err != nil {
		return nil, false, err
	} else if len(tr) > 1 {
		t := &tree{runs: make(map[string]*store.Run, len(tr))}
		for _, x := range tr {
			t.runs[x.ID] = x
		}
		runs = slices.DeleteFunc(tr, func(x *store.Run) bool { return !t.under(x.ID, runID) })
	}
	var out []*store.Event
	for _, x := range runs {
		evs, err := e.store.Events(ctx, x.ID, after)
		if err != nil {
			return nil, false, err
		}
		for _, ev := range evs {
			ev.Path = x.Path
		}
		out = append(out, evs...)
	}
	slices.SortFunc(out, func(a, b *store.Event) int { return cmp.Compare(a.ID, b.ID) })
	return out, r.Status.Terminal(), nil
}

// cursorLag is how many ids below the highest it has returned a Cursor
// reads again: on PostgreSQL an event's id is taken when it is inserted,
// so a transaction that took a lower id may commit after one that took a
// higher id was read.
const cursorLag = 1000

// Cursor reads the events of a run (and of the runs below it) a batch at
// a time, for a follower: each event once, those committed late under an
// id lower than one already read included.
type Cursor struct {
	RunID string
	after int64          // the highest id returned
	seen  map[int64]bool // ids returned, above after-cursorLag
}

// Next returns the events not returned yet, in the order they were
// stored, and whether the run has ended (see Events).
func (c *Cursor) Next(ctx context.Context, e *Engine) ([]*store.Event, bool, error) {
	evs, done, err := e.Events(ctx, c.RunID, max(c.after-cursorLag, 0))
	if err != nil {
		return nil, false, err
	}
	if c.seen == nil {
		c.seen = map[int64]bool{}
	}
	fresh := evs[:0]
	for _, ev := range evs {
		if !c.seen[ev.ID] {
			c.seen[ev.ID] = true
			fresh = append(fresh, ev)
			c.after = max(c.after, ev.ID)
		}
	}
	for id := range c.seen {
		if id <= c.after-cursorLag {
			delete(c.seen, id)
		}
	}
	return fresh, done, nil
}
