package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/engine/store"
)

// Event types, as in agentctl's --events output and `agentctl events`.
const (
	EventTextDelta         = "text-delta"          // text from the model
	EventToolCall          = "tool-call"           // the model called a tool
	EventToolCallApproval  = "tool-call-approval"  // a call waits for approval
	EventToolCallSuspended = "tool-call-suspended" // a call suspended itself
	EventToolResult        = "tool-result"         // a call has its result
	EventStepFinish        = "step-finish"         // a model turn ended
	EventFinish            = "finish"              // the run completed
	EventError             = "error"               // the run failed
)

// event builds an event: a JSON object with type and runId first, then
// the given fields in name order.
func event(runID, typ string, fields map[string]any) store.Event {
	var b bytes.Buffer
	b.WriteString(`{"type":`)
	writeJSON(&b, typ)
	b.WriteString(`,"runId":`)
	writeJSON(&b, runID)
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.WriteByte(',')
		writeJSON(&b, k)
		b.WriteByte(':')
		writeJSON(&b, fields[k])
	}
	b.WriteByte('}')
	return store.Event{RunID: runID, Type: typ, Data: b.Bytes()}
}

func writeJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b.WriteString("null")
		return
	}
	b.Truncate(len(strings.TrimRight(b.String(), "\n")))
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
		e.emit([]store.Event{event(runID, EventTextDelta, map[string]any{"text": chunk})})
	}
}

// resultEvent reports a call's result.
func resultEvent(runID string, c *store.Call) store.Event {
	return event(runID, EventToolResult, map[string]any{
		"callId": c.ID, "tool": c.Tool, "status": c.Status, "result": c.Result,
	})
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
