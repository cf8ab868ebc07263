package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
)

// gate enters a model's tool call in the ledger and decides, once,
// whether it waits for a human. Arguments are untrusted: a call to an
// unknown tool or with arguments that break the tool's schema fails at
// once, and the model is told why. The verdict and its reason are kept
// with the call. Every tool, whatever its toolkit, passes here.
func (rn *runner) gate(ctx context.Context, tc toolCallPart, seq int) (*store.Call, error) {
	a := rn.a
	c := &store.Call{ID: tc.ID, Seq: seq, Step: rn.r.Step, Tool: tc.Tool, Status: store.CallApproved}
	if tc.dropped > 0 {
		c.Args, c.Status = json.RawMessage(tc.Args), store.CallFailed
		c.Result = fmt.Sprintf("error: arguments of %d bytes are over the limit of %d bytes (AGENTCTL_MAX_ARGS); they were not kept: send smaller arguments",
			tc.dropped, rn.e.limits.MaxArgs)
		return c, nil
	}
	args, err := decodeArgs(tc.Args)
	if err == nil {
		c.Args, _ = json.Marshal(args)
	} else {
		c.Args, _ = json.Marshal(tc.Args) // kept as the string the model sent
	}
	if _, ok := a.subs[tc.Tool]; ok {
		// A delegation: the sub-agent's own calls pass their gates.
		task, _ := args["task"].(string)
		switch {
		case err != nil:
			c.Status, c.Result = store.CallFailed, "error: invalid arguments: "+err.Error()
		case strings.TrimSpace(task) == "":
			c.Status, c.Result = store.CallFailed, `error: invalid arguments: a delegation needs {"task": "..."}`
		default:
			c.Gate = store.Gate{Verdict: store.GateDelegation, Reasons: []store.Reason{{Kind: store.ReasonSubAgent, Detail: tc.Tool}}}
		}
		return c, nil
	}
	t, lerr := a.tool(ctx, tc.Tool)
	switch {
	case lerr != nil:
		c.Status, c.Result = store.CallFailed, "error: "+lerr.Error()
		return c, nil
	case t == nil:
		c.Status, c.Result = store.CallFailed, fmt.Sprintf("error: unknown tool %q; available tools: %s", tc.Tool, strings.Join(a.toolNames(ctx), ", "))
		return c, nil
	case err != nil:
		c.Status, c.Result = store.CallFailed, "error: invalid arguments: "+err.Error()
		return c, nil
	}
	c.Tool = t.tool.Name()
	if err := describeSchemaError(t.tool.Input().Validate(args)); err != nil {
		c.Status, c.Result = store.CallFailed, "error: invalid arguments: "+err.Error()
		return c, nil
	}
	return c, rn.approval(ctx, c, t, args)
}

// approval decides whether a valid call waits for a human: the tool's
// own condition, the agent's requireToolApproval, that of each
// supervisor above the run (whose policy comes with it: policiesOf),
// the run's --require-approval, unless a human approved the tool for
// the rest of the run.
func (rn *runner) approval(ctx context.Context, c *store.Call, t *toolNode, args map[string]any) error {
	rule, shadows := rn.matchRules(c, t, args) // policy rules: engine/rules.go
	defer func() { c.Gate.Shadow = shadows }()
	if rule != nil && rule.Effect == string(spec.EffectDeny) {
		deny(c, rule)
		return nil
	}
	allowed := rule != nil && rule.Effect == string(spec.EffectAllow)
	v := t.tool.Approval(args, runVars(rn.r))
	own := store.Reason{Kind: store.ReasonKind(v.Reason), Detail: v.Detail}
	var why []store.Reason
	if v.Err != nil {
		c.GateError = v.Err.Error()
	}
	if v.Need && !allowed {
		why = append(why, own)
	}
	if rule != nil && rule.Effect == string(spec.EffectRequire) {
		why = append(why, store.Reason{Kind: store.ReasonRule, Detail: rule.Name})
	}
	if rn.a.spec.RequireToolApproval && !allowed {
		why = append(why, store.Reason{Kind: store.ReasonAgent})
	}
	for _, s := range rn.g.gating(rn.r) {
		why = append(why, store.Reason{Kind: store.ReasonAgent, Detail: s.spec.Name})
	}
	if rn.st.RequireApproval {
		why = append(why, store.Reason{Kind: store.ReasonRun})
	}
	up := rn.g.upload
	if up != nil && up.Every {
		why = append(why, store.Reason{Kind: store.ReasonUpload, Detail: up.By})
	}
	if len(why) == 0 {
		if allowed {
			own = store.Reason{Kind: store.ReasonRule, Detail: rule.Name}
		}
		if v.Reason != "" || allowed {
			c.Gate = store.Gate{Verdict: store.GateFree, Reasons: []store.Reason{own}, Rule: rule}
		}
		return nil
	}
	granted, err := rn.granted(ctx, c.Tool)
	if err != nil {
		return err
	}
	// An upload's calls each wait, and a require rule's: no grant stands in.
	if granted && (up == nil || !up.Every) && (rule == nil || allowed) {
		c.Gate = store.Gate{Verdict: store.GateGranted, Reasons: why, Rule: rule}
		return nil
	}
	c.Status, c.Kind = store.CallPending, store.KindApproval
	c.Gate = store.Gate{Verdict: store.GateRequired, Reasons: why, Rule: rule}
	rn.resolveOnCall(ctx, c)
	c.Deadline = rn.e.deadline(rn.a, t.decl)
	if n := max(t.decl.Approvals, ruleApprovals(rule)); n > 1 {
		c.Needed = n
	}
	if t.preview != nil { // what the approver is shown: engine/previewrun.go
		c.Gate.Preview = rn.e.runPreview(ctx, t, rn.r, c)
	}
	return nil
}

// deadline is when a call that starts waiting now expires: the tool's
// approvalTimeout, else the agent's; zero for none.
func (e *Engine) deadline(a *agentNode, t *spec.Tool) time.Time {
	var d time.Duration
	if t != nil {
		d = t.ApprovalTimeout
	}
	if d == 0 {
		d = a.spec.ApprovalTimeout
	}
	if d == 0 {
		return time.Time{}
	}
	return e.now().Add(d).UTC().Truncate(time.Millisecond)
}

// runVars is what placeholders see as run.
func runVars(r *store.Run) map[string]any {
	return map[string]any{"id": r.ID, "agent": r.Agent, "step": r.Step}
}

// toolNames lists what the agent's model may call: tools and sub-agents.
func (a *agentNode) toolNames(ctx context.Context) []string {
	defs, _ := a.toolDefs(ctx)
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
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
