package toolkits

import (
	"context"
	"fmt"
	"slices"
	"strings"

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

// Absent reports why a condition cannot be trusted with this input: it
// reads a field (input.a, input.a.b) the call leaves out, or reads input
// in a way that hides which fields (get(input, k), input[k]). Either
// would read nil, which lets a call through; the gate then asks a human.
// A field the condition itself compares with nil, or gives a default
// with ??, may be left out: the author decided what its absence means.
func Absent(cond tmpl.Expr, input map[string]any) error {
	paths, opaque := cond.Paths("input")
	if opaque {
		return fmt.Errorf("%s reads input other than as input.NAME: what it reads cannot be checked", cond.Source())
	}
	guarded := cond.Guarded("input")
	for _, p := range paths {
		if !has(input, p) && !slices.ContainsFunc(guarded, func(g []string) bool { return slices.Equal(g, p) }) {
			f := "input." + strings.Join(p, ".")
			return fmt.Errorf("%s reads %s, which the call leaves out (to say what its absence means: %s != nil && ..., or %s ?? DEFAULT)", cond.Source(), f, f, f)
		}
	}
	return nil
}

// has reports whether a nested path is set in v.
func has(v map[string]any, path []string) bool {
	for i, k := range path {
		x, ok := v[k]
		if !ok || x == nil {
			return false
		}
		if i < len(path)-1 {
			if v, ok = x.(map[string]any); !ok {
				return false
			}
		}
	}
	return true
}

// Tools implements Kit.
func (d *Declared) Tools(context.Context) ([]Tool, error) { return []Tool{d}, nil }

// Describe implements Kit.
func (d *Declared) Describe() Description {
	desc := Description{Action: d.Summary, Env: EnvNames(d.Vars)}
	if need, isConst := d.Spec.RequireApproval.IsConst(); isConst && need {
		desc.Gate = []string{"always"}
	} else if !isConst {
		desc.Gate = []string{"when " + d.Spec.RequireApproval.Source()}
	}
	return desc
}

// Close implements Kit.
func (d *Declared) Close() error { return nil }

// Preview implements Previewer when the action does; else it says the
// toolkit cannot tell.
func (d *Declared) Preview(c Call) (Preview, error) {
	p, ok := d.Act.(Previewer)
	if !ok {
		return Preview{}, fmt.Errorf("the %s toolkit cannot say what a call will do", d.Spec.Kind())
	}
	return p.Preview(c)
}
