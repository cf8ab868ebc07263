package toolkits

import (
	"context"
	"fmt"

	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/spec/tmpl"
)

// Declared is the one tool a declaration with an action makes (exec,
// http, file, output): its name, description, input schema and
// requireApproval come from the spec; the toolkit supplies the action.
// It is both the Tool and its Kit.
type Declared struct {
	Spec *spec.Tool
	Act  Action
	// Summary names what the action does (Description.Action).
	Summary string
	// Vars are the environment variables the action reads (Secrets).
	Vars []string
}

var (
	_ Tool = (*Declared)(nil)
	_ Kit  = (*Declared)(nil)
)

// Name implements Tool.
func (d *Declared) Name() string { return d.Spec.Name }

// Description implements Tool.
func (d *Declared) Description() string { return d.Spec.Description }

// Input implements Tool.
func (d *Declared) Input() *spec.Schema { return d.Spec.Input }

// Secrets implements Tool.
func (d *Declared) Secrets() []string { return d.Vars }

// Do implements Tool.
func (d *Declared) Do(ctx context.Context, c Call) (Result, error) { return d.Act.Do(ctx, c) }

// Approval implements Tool: the declaration's requireApproval over input
// and run. A condition that reads a field the call leaves out (an
// optional one) asks a human: it would read nil, and a nil compared with
// anything lets the call through.
func (d *Declared) Approval(input, run map[string]any) Verdict {
	cond := d.Spec.RequireApproval
	if err := Absent(cond, input); err != nil {
		return Verdict{Need: true, Reason: ReasonFailed, Err: err}
	}
	need, err := cond.Eval(tmpl.Env{"input": input, "run": run})
	_, isConst := cond.IsConst()
	switch {
	case err != nil:
		return Verdict{Need: true, Reason: ReasonFailed, Err: err}
	case need && isConst:
		return Verdict{Need: true, Reason: ReasonTool}
	case need:
		return Verdict{Need: true, Reason: ReasonCondition, Detail: cond.Source()}
	case !isConst:
		return Verdict{Reason: ReasonFalse, Detail: cond.Source()}
	}
	return Verdict{}
}

// Absent reports the first field of input a condition reads that the
// call leaves out.
func Absent(cond tmpl.Expr, input map[string]any) error {
	for _, name := range cond.Reads("input") {
		if _, ok := input[name]; !ok {
			return fmt.Errorf("%s reads input.%s, which the call leaves out", cond.Source(), name)
		}
	}
	return nil
}

// Tools implements Kit.
func (d *Declared) Tools(context.Context) ([]Tool, error) { return []Tool{d}, nil }

// Describe implements Kit.
func (d *Declared) Describe() Description {
	desc := Description{Action: d.Summary}
	if need, isConst := d.Spec.RequireApproval.IsConst(); isConst && need {
		desc.Gate = []string{"always"}
	} else if !isConst {
		desc.Gate = []string{"when " + d.Spec.RequireApproval.Source()}
	}
	return desc
}

// Close implements Kit.
func (d *Declared) Close() error { return nil }
