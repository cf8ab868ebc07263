package main

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlstore"
)

// TestPhrase checks what the command line says of each typed error of
// the engine and the store: the same words as when the engine phrased
// them.
func TestPhrase(t *testing.T) {
	calls := []*store.Call{{ID: "call_1", Tool: "a"}, {ID: "call_2", Tool: "b"}}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&engine.UnknownError{What: "model", Name: "x", Known: []string{"m1", "m2"}}, `unknown model "x" for --model (models: m1, m2)`},
		{&engine.UnknownError{What: "agent", Name: "x", Known: []string{"a"}}, `unknown agent "x" (agents: a)`},
		{&engine.InterruptedError{RunID: "R"}, "interrupted: run R is checkpointed; continue it with agentctl continue R"},
		{&engine.NotReadyError{RunID: "R", Status: store.Completed}, "run R is completed: only a run that stalled, one left running by a stopped process, or one whose calls were decided with --detach, can be continued"},
		{engine.ErrOneCall, "--args and --data apply to one call: choose it with --call"},
		{&engine.ChooseError{RunID: "R", Kind: store.KindApproval, Waiting: calls}, "run R has 2 calls waiting for approval; choose one with --call, or --all: call_1 (a), call_2 (b)"},
		{&engine.WrongCallError{RunID: "R", CallID: "c", Status: store.CallInterrupted, Kind: store.KindInterrupted, Want: store.KindApproval},
			"call c of run R was interrupted (its process stopped) and may or may not have taken effect: use agentctl retry or resolve"},
		{&engine.WrongCallError{RunID: "R", CallID: "c", Status: store.CallPending, Kind: store.KindApproval, Want: store.KindInterrupted},
			"call c of run R was not interrupted: it waits for approval"},
		{&engine.WrongCallError{RunID: "R", CallID: "c", Status: store.CallPending, Kind: store.KindDelegation, Want: store.KindApproval},
			"call c of run R is a delegation waiting for its sub-agent: decide the sub-agent's calls"},
		{&engine.WrongCallError{RunID: "R", CallID: "c", Status: store.CallPending, Kind: store.KindDelegation, Want: store.KindApproval, Instead: calls},
			"call c of run R is a delegation waiting for its sub-agent: decide the sub-agent's calls: call_1 (a), call_2 (b)"},
		{&engine.WrongCallError{RunID: "R", CallID: "c", Status: store.CallPending, Kind: store.KindSuspend, Want: store.KindApproval},
			"call c of run R suspended itself and waits for resume data: use agentctl resume (or decline)"},
		{&engine.WrongCallError{RunID: "R", CallID: "c", Status: store.CallPending, Kind: store.KindApproval, Want: store.KindSuspend},
			"call c of run R waits for approval, not resume data: use agentctl approve or decline"},
		{&engine.InputError{Field: engine.InputArgs, CallID: "c", Tool: "t", Problem: engine.ProblemNotObject}, "--args for call c: not a JSON object"},
		{&engine.InputError{Field: engine.InputArgs, CallID: "c", Tool: "t", Problem: engine.ProblemNoTool}, `--args for call c: the agent has no tool "t"`},
		{&engine.InputError{Field: engine.InputArgs, CallID: "c", Tool: "t", Problem: engine.ProblemViolations, Err: errors.New("\n  /x: bad")}, "--args for call c (t) break its input schema:\n  /x: bad"},
		{&engine.InputError{Field: engine.InputData, CallID: "c", Tool: "t", Problem: engine.ProblemMissing}, "resume call c: no data: pass --data JSON or --data-file FILE"},
		{&engine.InputError{Field: engine.InputData, CallID: "c", Tool: "t", Problem: engine.ProblemNotJSON, Err: errors.New("oops")}, "resume data for call c: invalid JSON: oops"},
		{&engine.InputError{Field: engine.InputData, CallID: "c", Tool: "t", Problem: engine.ProblemNotObject}, "resume data for call c: want a JSON object"},
		{&engine.InputError{Field: engine.InputData, CallID: "c", Tool: "t", Problem: engine.ProblemViolations, Err: errors.New("\n  /x: bad")}, "resume data for call c (t) breaks its resumeSchema:\n  /x: bad"},
		{fmt.Errorf("open database d: %w (schema 6 of 7)", store.ErrOldSchema), "open database d: database schema is older than this agentctl (schema 6 of 7); this command only reads: upgrade it with agentctl migrate (same --db)"},
		{fmt.Errorf("%w: x", store.ErrCorrupt), "database corrupt: x; agentctl doctor checks it; restore it from a backup"},
		{&store.ConflictError{RunID: "R", CallID: "c", Status: store.CallSucceeded, Action: store.Retry, By: "bob", At: time.Unix(0, 0)},
			"call c of run R was already retried by bob at 1970-01-01T00:00:00Z (now succeeded)"},
		{&store.ConflictError{RunID: "R", CallID: "c", Status: store.CallDeclined, Action: store.Decline, By: "bob", At: time.Unix(0, 0)},
			"call c of run R was already declined by bob at 1970-01-01T00:00:00Z"},
		{&store.ConflictError{RunID: "R", CallID: "c", Status: store.CallSucceeded}, "call c of run R does not wait for a decision (status: succeeded)"},
	} {
		if got := phrase(tc.err); got != tc.want {
			t.Errorf("phrase(%#v):\n got %s\nwant %s", tc.err, got, tc.want)
		}
		var stopped *engine.InterruptedError
		if !errors.Is(tc.err, engine.ErrUsage) && !errors.Is(tc.err, store.ErrConflict) && !errors.Is(tc.err, store.ErrUnavailable) && !errors.As(tc.err, &stopped) {
			t.Errorf("%T matches no error class: it would exit 1", tc.err)
		}
	}
}

// TestFixes checks the commands doctor names for what needs a human.
func TestFixes(t *testing.T) {
	r := &sqlstore.Report{Schema: 7, Findings: []sqlstore.Finding{
		{Check: "stopped runs", Status: sqlstore.FindingWarn},
		{Check: "stopped runs", Status: sqlstore.FindingOK},
		{Check: "interrupted calls", Status: sqlstore.FindingWarn},
		{Check: "overdue approvals", Status: sqlstore.FindingWarn},
		{Check: "schema", Status: sqlstore.FindingWarn},
	}}
	addFixes(r)
	want := []string{"agentctl continue RUNID", "", "agentctl retry RUNID --call ID, or agentctl resolve", "agentctl expire",
		"upgrade it with agentctl migrate (any command that writes also does)"}
	for i, f := range r.Findings {
		if f.Fix != want[i] {
			t.Errorf("finding %d (%s %s): fix %q, want %q", i, f.Check, f.Status, f.Fix, want[i])
		}
	}
}

// TestGateText checks that a typed gate reads as agentctl always phrased
// it (and as older versions stored it).
func TestGateText(t *testing.T) {
	for _, text := range []string{
		"required by tool requireApproval, run --require-approval",
		`required by requireApproval ${{ input.a in ["x", "y"] }}, agent requireToolApproval`,
		"required by requireApproval failed to evaluate",
		"required by mcp requireApproval true",
		"approved for the rest of the run (approve --always); would need: tool requireApproval",
		"delegation to sub-agent oncall",
		"not required: requireApproval ${{ input.n > 3 }} is false",
		"not required: the server marks get read-only (autoApproveReadOnly)",
		"something else",
	} {
		if got := store.DecodeGate(text).Phrase(); got != text {
			t.Errorf("Phrase(DecodeGate(%q)) = %q", text, got)
		}
	}
}
