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
}

// PendingView is a call waiting for a human.
type PendingView struct {
	CallID string          `json:"callId"`
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
	Kind   string          `json:"kind"`
}

// RunDetail is a run with its whole call ledger and audit trail
// (agentctl show).
type RunDetail struct {
	RunView
	Calls     []CallView     `json:"calls"`
	Decisions []DecisionView `json:"decisions"`
}

// CallView is one tool call of a run.
type CallView struct {
	CallID string           `json:"callId"`
	Tool   string           `json:"tool"`
	Args   json.RawMessage  `json:"args"`
	Status store.CallStatus `json:"status"`
	Result string           `json:"result"`
}

// DecisionView is one recorded decision.
type DecisionView struct {
	CallID string    `json:"callId"`
	Action string    `json:"action"`
	By     string    `json:"by"`
	OSUser string    `json:"osUser"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

func view(r *store.Run, pending []*store.Call) *RunView {
	v := &RunView{
		RunID: r.ID, Agent: r.Agent, Status: r.Status, Input: r.Input, Output: r.Output, Error: r.Error,
		Pending: []PendingView{}, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	for _, c := range pending {
		v.Pending = append(v.Pending, PendingView{CallID: c.ID, Tool: c.Tool, Args: c.Args, Kind: c.Kind})
	}
	return v
}

// Inspect returns a run by its full id with its pending calls.
func (e *Engine) Inspect(ctx context.Context, id string) (*RunView, error) {
	r, err := e.store.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	p, err := e.store.Pending(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	return view(r, p[id]), nil
}

// Detail returns a run by its full id with its calls and decisions.
func (e *Engine) Detail(ctx context.Context, id string) (*RunDetail, error) {
	v, err := e.Inspect(ctx, id)
	if err != nil {
		return nil, err
	}
	calls, err := e.store.Calls(ctx, id)
	if err != nil {
		return nil, err
	}
	ds, err := e.store.Decisions(ctx, id)
	if err != nil {
		return nil, err
	}
	d := &RunDetail{RunView: *v, Calls: []CallView{}, Decisions: []DecisionView{}}
	for _, c := range calls {
		d.Calls = append(d.Calls, CallView{CallID: c.ID, Tool: c.Tool, Args: c.Args, Status: c.Status, Result: c.Result})
	}
	for _, x := range ds {
		d.Decisions = append(d.Decisions, DecisionView{CallID: x.CallID, Action: x.Action, By: x.By, OSUser: x.OSUser, Reason: x.Reason, At: x.At})
	}
	return d, nil
}

// List returns runs matching f, newest first, with their pending calls.
func (e *Engine) List(ctx context.Context, f store.Filter) ([]*RunView, error) {
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
