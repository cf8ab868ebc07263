package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// RunView is a run as users and scripts see it (agentctl -o json).
type RunView struct {
	RunID     string        `json:"runId"`
	Agent     string        `json:"agent"`
	Status    store.Status  `json:"status"`
	Input     string        `json:"input"`
	Output    string        `json:"output"`
	Error     string        `json:"error"`
	Pending   []PendingView `json:"pending"`
	CreatedAt time.Time     `json:"createdAt"`
	UpdatedAt time.Time     `json:"updatedAt"`
	// Notice tells what a command could not do without failing, such as
	// resume data that could not be taken from a message.
	Notice string `json:"notice,omitempty"`
}

// PendingView is a call waiting for a human: for approval, or for resume
// data when the tool suspended itself.
type PendingView struct {
	CallID       string          `json:"callId"`
	Tool         string          `json:"tool"`
	Args         json.RawMessage `json:"args"`
	Kind         string          `json:"kind"`                   // approval or suspend
	Gate         string          `json:"gate,omitempty"`         // why approval is needed
	GateError    string          `json:"gateError,omitempty"`    // the requireApproval expression's error
	Payload      json.RawMessage `json:"payload,omitempty"`      // what a suspended call shows
	ResumeSchema json.RawMessage `json:"resumeSchema,omitempty"` // what its resume data must satisfy
	Deadline     *time.Time      `json:"deadline,omitempty"`     // when it expires
}

// RunDetail is a run with its whole call ledger and audit trail
// (agentctl show).
type RunDetail struct {
	RunView
	Calls     []CallView     `json:"calls"`
	Decisions []DecisionView `json:"decisions"`
	Grants    []string       `json:"grants"` // tools approved for the rest of the run
}

// CallView is one tool call of a run.
type CallView struct {
	CallID    string           `json:"callId"`
	Tool      string           `json:"tool"`
	Args      json.RawMessage  `json:"args"`
	Status    store.CallStatus `json:"status"`
	Result    string           `json:"result"`
	Gate      string           `json:"gate,omitempty"`
	GateError string           `json:"gateError,omitempty"`
	Payload   json.RawMessage  `json:"payload,omitempty"`
	Resume    json.RawMessage  `json:"resume,omitempty"`
}

// DecisionView is one record of the audit trail.
type DecisionView struct {
	CallID     string          `json:"callId"`
	Action     string          `json:"action"` // approve, decline, resume, expire or grant
	By         string          `json:"by"`
	OSUser     string          `json:"osUser"`
	Reason     string          `json:"reason"`
	ArgsBefore json.RawMessage `json:"argsBefore,omitempty"`
	ArgsAfter  json.RawMessage `json:"argsAfter,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	At         time.Time       `json:"at"`
}

func view(r *store.Run, pending []*store.Call) *RunView {
	v := &RunView{
		RunID: r.ID, Agent: r.Agent, Status: r.Status, Input: r.Input, Output: r.Output, Error: r.Error,
		Pending: []PendingView{}, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	for _, c := range pending {
		p := PendingView{CallID: c.ID, Tool: c.Tool, Args: c.Args, Kind: c.Kind, Gate: c.Gate, GateError: c.GateError,
			Payload: c.Payload, ResumeSchema: c.ResumeSchema}
		if !c.Deadline.IsZero() {
			p.Deadline = &c.Deadline
		}
		v.Pending = append(v.Pending, p)
	}
	return v
}

// Inspect returns a run by its full id with its pending calls, first
// expiring overdue ones.
func (e *Engine) Inspect(ctx context.Context, id string) (*RunView, error) {
	r, calls, err := e.touch(ctx, id)
	if err != nil {
		return nil, err
	}
	return view(r, pending(calls)), nil
}

// Detail returns a run by its full id with its calls, decisions and
// grants, first expiring overdue calls.
func (e *Engine) Detail(ctx context.Context, id string) (*RunDetail, error) {
	r, calls, err := e.touch(ctx, id)
	if err != nil {
		return nil, err
	}
	ds, err := e.store.Decisions(ctx, id)
	if err != nil {
		return nil, err
	}
	grants, err := e.store.Grants(ctx, id)
	if err != nil {
		return nil, err
	}
	d := &RunDetail{RunView: *view(r, pending(calls)), Calls: []CallView{}, Decisions: []DecisionView{}, Grants: []string{}}
	d.Grants = append(d.Grants, grants...)
	for _, c := range calls {
		d.Calls = append(d.Calls, CallView{CallID: c.ID, Tool: c.Tool, Args: c.Args, Status: c.Status, Result: c.Result,
			Gate: c.Gate, GateError: c.GateError, Payload: c.Payload, Resume: c.Resume})
	}
	for _, x := range ds {
		d.Decisions = append(d.Decisions, DecisionView{CallID: x.CallID, Action: x.Action, By: x.By, OSUser: x.OSUser,
			Reason: x.Reason, ArgsBefore: x.ArgsBefore, ArgsAfter: x.ArgsAfter, Data: x.Data, At: x.At})
	}
	return d, nil
}

// List returns runs matching f, newest first, with their pending calls,
// first expiring every overdue call.
func (e *Engine) List(ctx context.Context, f store.Filter) ([]*RunView, error) {
	if _, err := e.ExpireAll(ctx); err != nil {
		return nil, err
	}
	runs, err := e.store.List(ctx, f)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(runs))
	for _, r := range runs {
		if r.Status == store.Suspended {
			ids = append(ids, r.ID)
		}
	}
	pending, err := e.store.Pending(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]*RunView, len(runs))
	for i, r := range runs {
		out[i] = view(r, pending[r.ID])
	}
	return out, nil
}

// Resolve returns the full id of the run whose id starts with prefix.
func (e *Engine) Resolve(ctx context.Context, prefix string) (string, error) {
	return e.store.ResolveID(ctx, prefix)
}
