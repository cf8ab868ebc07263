package engine

import (
	"bytes"
	"context"
	"encoding/json"
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
		Step         int    `json:"step"`
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

// event builds a run's event from its fields.
func event(runID string, p payload) store.Event {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		panic(err) // strings, numbers, times and JSON already valid: cannot fail
	}
	return store.Event{RunID: runID, Type: p.eventType(), Data: bytes.TrimRight(b.Bytes(), "\n")}
}

// emit hands committed events to the Config.OnEvent hook.
func (e *Engine) emit(evs []store.Event) {
	if e.onEvent == nil {
		return
	}
	e.emitMu.Lock()
	defer e.emitMu.Unlock()
	for _, ev := range evs {
		e.onEvent(ev)
	}
}

// streamTo returns the callback that streams a model's text to the
// OnEvent hook as live text-delta events, or nil without a hook.
func (e *Engine) streamTo(runID string, streamed *bool) func(string) {
	if e.onEvent == nil {
		return nil
	}
	return func(chunk string) {
		*streamed = true
		e.emit([]store.Event{event(runID, TextDelta{Text: chunk})})
	}
}

// resultEvent reports a call's result.
func resultEvent(runID string, c *store.Call) store.Event {
	return event(runID, ToolResult{CallID: c.ID, Tool: c.Tool, Status: c.Status, Result: ResultJSON(c.Result, c.ResultObject)})
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

// Events returns a run's events after the one with id after, and whether
// the run has ended. The status is read first: a run that has ended has
// all its events stored, so a follower that sees done has seen them all.
func (e *Engine) Events(ctx context.Context, runID string, after int64) ([]*store.Event, bool, error) {
	r, err := e.store.Run(ctx, runID)
	if err != nil {
		return nil, false, err
	}
	evs, err := e.store.Events(ctx, runID, after)
	return evs, r.Status.Terminal(), err
}
