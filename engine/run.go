package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/toolkits"
)

// StartOptions describe a new run.
type StartOptions struct {
	Agent string
	Input string
	// RequireApproval makes every tool call of the run wait for a human.
	RequireApproval bool
}

// Start creates a run of an agent and advances it until it completes,
// fails or waits for a human. The run is durable from the first write.
func (e *Engine) Start(ctx context.Context, g *Graph, opts StartOptions) (*RunView, error) {
	a, ok := g.agents[opts.Agent]
	if !ok {
		known := strings.Join(g.Agents(), ", ")
		if known == "" {
			known = "none"
		}
		return nil, usagef("unknown agent %q (agents: %s)", opts.Agent, known)
	}
	st := &state{RequireApproval: opts.RequireApproval}
	if a.spec.Instructions != "" {
		st.Messages = append(st.Messages, message{Role: "system", Text: a.spec.Instructions})
	}
	st.Messages = append(st.Messages, message{Role: "user", Text: opts.Input})
	r := &store.Run{
		ID:       e.newRunID(),
		Agent:    opts.Agent,
		Status:   store.Running,
		Input:    opts.Input,
		SpecHash: g.hash,
		State:    st.encode(),
	}
	if err := e.store.CreateRun(ctx, r, g.snapshot, e.lease); err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.graphs[g.hash] = g
	e.mu.Unlock()
	return e.advance(ctx, g, r)
}

// advance drives a run this process holds until it completes, fails or
// waits for a human, checkpointing after every step, and returns the run
// as it left it.
func (e *Engine) advance(ctx context.Context, g *Graph, r *store.Run) (*RunView, error) {
	stop := e.heartbeat(ctx, r.ID)
	defer stop()
	a, ok := g.agents[r.Agent]
	if !ok {
		return e.fail(ctx, r, fmt.Errorf("agent %q is not in the run's spec", r.Agent))
	}
	st, err := decodeState(r)
	if err != nil {
		return nil, err
	}
	calls, err := e.store.Calls(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	for {
		// The ledger in memory is this process's own writes; other
		// processes only decide pending calls, which Suspend detects.
		turn := slices.DeleteFunc(slices.Clone(calls), func(c *store.Call) bool { return c.Step != r.Step })
		if c := find(turn, store.CallApproved); c != nil {
			if err := e.execute(ctx, a, r, c); err != nil {
				return nil, err
			}
			continue
		}
		if find(turn, store.CallPending) != nil {
			err := e.store.Suspend(ctx, e.lease, r)
			if errors.Is(err, store.ErrNotIdle) {
				// A decision arrived while we worked: act on it.
				if calls, err = e.store.Calls(ctx, r.ID); err != nil {
					return nil, err
				}
				continue
			}
			if err != nil {
				return nil, err
			}
			return view(r, pending(calls)), nil
		}
		if find(turn, store.CallExecuting) != nil {
			return e.fail(ctx, r, errors.New("a tool call was left executing by a process that stopped; it is not run again"))
		}
		if r.Step >= a.spec.MaxSteps {
			return e.fail(ctx, r, fmt.Errorf("%w: agent %s allows %d model turns", ErrMaxSteps, a.spec.Name, a.spec.MaxSteps))
		}
		newCalls, err := e.modelTurn(ctx, a, r, st, calls)
		if err != nil {
			return nil, err
		}
		if r.Status.Terminal() {
			return view(r, nil), nil
		}
		calls = append(calls, newCalls...)
	}
}

// pending returns the calls waiting for a decision.
func pending(calls []*store.Call) []*store.Call {
	return slices.DeleteFunc(slices.Clone(calls), func(c *store.Call) bool { return c.Status != store.CallPending })
}

func find(calls []*store.Call, s store.CallStatus) *store.Call {
	for _, c := range calls {
		if c.Status == s {
			return c
		}
	}
	return nil
}

// modelTurn asks the model for its next turn and checkpoints the answer:
// final text completes the run; tool calls enter the ledger, each through
// the approval gate.
func (e *Engine) modelTurn(ctx context.Context, a *agentNode, r *store.Run, st *state, calls []*store.Call) ([]*store.Call, error) {
	llm, err := a.model.build()
	if err != nil {
		_, err = e.fail(ctx, r, err)
		return nil, err
	}
	var opts []llms.CallOption
	if len(a.defs) > 0 {
		opts = append(opts, llms.WithTools(a.defs))
	}
	resp, err := llm.GenerateContent(ctx, st.conversation(calls), opts...)
	if err == nil && (resp == nil || len(resp.Choices) == 0) {
		err = errors.New("the model returned no choices")
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // interrupted: leave the run as checkpointed
		}
		_, err = e.fail(ctx, r, fmt.Errorf("model %s: %w", a.spec.Model, err))
		return nil, err
	}
	choice := resp.Choices[0]
	msg := message{Role: "assistant", Text: choice.Content}
	r.Step++
	var newCalls []*store.Call
	seq := len(calls)
	for _, tc := range choice.ToolCalls {
		if tc.FunctionCall == nil {
			continue
		}
		seq++
		id := tc.ID
		if id == "" || slices.ContainsFunc(calls, func(c *store.Call) bool { return c.ID == id }) ||
			slices.ContainsFunc(newCalls, func(c *store.Call) bool { return c.ID == id }) {
			id = fmt.Sprintf("call_%d", seq)
		}
		msg.ToolCalls = append(msg.ToolCalls, toolCallPart{ID: id, Tool: tc.FunctionCall.Name, Args: tc.FunctionCall.Arguments})
		newCalls = append(newCalls, e.gate(a, st, r, id, seq, tc.FunctionCall))
	}
	st.Messages = append(st.Messages, msg)
	r.State = st.encode()
	if len(newCalls) == 0 {
		r.Status, r.Output = store.Completed, choice.Content
	}
	return newCalls, e.store.Checkpoint(ctx, e.lease, r, newCalls)
}

// gate validates a model's tool call and decides whether it waits for a
// human. Arguments are untrusted: a call to an unknown tool or with
// arguments that break the tool's schema fails at once, and the model is
// told why.
func (e *Engine) gate(a *agentNode, st *state, r *store.Run, id string, seq int, fc *llms.FunctionCall) *store.Call {
	c := &store.Call{ID: id, Seq: seq, Step: r.Step, Tool: fc.Name, Status: store.CallApproved}
	args, err := decodeArgs(fc.Arguments)
	if err == nil {
		c.Args, _ = json.Marshal(args)
	} else {
		c.Args, _ = json.Marshal(fc.Arguments) // kept as the string the model sent
	}
	t, ok := a.tools[fc.Name]
	switch {
	case !ok:
		c.Status, c.Result = store.CallFailed, fmt.Sprintf("error: unknown tool %q; available tools: %s", fc.Name, strings.Join(toolNames(a), ", "))
	case err != nil:
		c.Status, c.Result = store.CallFailed, "error: invalid arguments: "+err.Error()
	default:
		if err := validateArgs(t.spec, args); err != nil {
			c.Status, c.Result = store.CallFailed, "error: invalid arguments: "+err.Error()
		} else if t.spec.RequireApproval || a.spec.RequireToolApproval || st.RequireApproval {
			c.Status, c.Kind = store.CallPending, store.KindApproval
		}
	}
	return c
}

func toolNames(a *agentNode) []string {
	names := make([]string, len(a.defs))
	for i, d := range a.defs {
		names[i] = d.Function.Name
	}
	return names
}

// decodeArgs parses a model's argument JSON; empty means no arguments.
func decodeArgs(s string) (map[string]any, error) {
	if strings.TrimSpace(s) == "" {
		return map[string]any{}, nil
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(s), &args); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if args == nil {
		args = map[string]any{}
	}
	return args, nil
}

// validateArgs checks arguments against a tool's input schema and lists
// every violation as "pointer: message".
func validateArgs(t *spec.Tool, args map[string]any) error {
	return describeSchemaError(t.ValidateInput(args))
}

// execute runs one approved call. The call is marked executing, durably,
// before its side effect starts, so it is never started twice.
func (e *Engine) execute(ctx context.Context, a *agentNode, r *store.Run, c *store.Call) error {
	if err := e.store.StartCall(ctx, e.lease, r.ID, c.ID); err != nil {
		return err
	}
	c.Status = store.CallExecuting
	status, content := store.CallSucceeded, ""
	var args map[string]any
	err := json.Unmarshal(c.Args, &args)
	t, ok := a.tools[c.Tool]
	if err == nil && !ok {
		err = fmt.Errorf("agent %s has no tool %q", a.spec.Name, c.Tool) // the gate lets none through
	}
	var res toolkits.Result
	if err == nil {
		res, err = t.action.Do(ctx, toolkits.Call{RunID: r.ID, CallID: c.ID, Tool: c.Tool, Input: args})
	}
	switch {
	case err != nil:
		status, content = store.CallFailed, "error: "+err.Error()
	case res.Failed:
		status, content = store.CallFailed, res.Content
	default:
		content = res.Content
	}
	// The outcome is recorded even if we were interrupted meanwhile.
	if err := e.store.FinishCall(context.WithoutCancel(ctx), e.lease, r.ID, c.ID, status, content); err != nil {
		return err
	}
	c.Status, c.Result = status, content
	return nil
}

// fail ends a run with an error.
func (e *Engine) fail(ctx context.Context, r *store.Run, cause error) (*RunView, error) {
	r.Status, r.Error = store.Failed, cause.Error()
	if err := e.store.Checkpoint(context.WithoutCancel(ctx), e.lease, r, nil); err != nil {
		return nil, err
	}
	return view(r, nil), nil
}
