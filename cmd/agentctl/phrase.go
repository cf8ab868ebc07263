package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlstore"
)

// busyHint follows how long SQLite waited for a write lock.
const busyHint = " (AGENTCTL_BUSY_TIMEOUT waits longer)"

// phrase says what went wrong as the command line does: the engine's and
// the store's typed errors carry the facts, and this names the commands
// and flags that fix them.
func phrase(err error) string {
	var (
		unknown  *engine.UnknownError
		stopped  *engine.InterruptedError
		notReady *engine.NotReadyError
		choose   *engine.ChooseError
		wrong    *engine.WrongCallError
		input    *engine.InputError
		conflict *store.ConflictError
		busy     *store.BusyError
	)
	switch {
	case errors.As(err, &unknown) && unknown.What == "model":
		return fmt.Sprintf("unknown model %q for --model (models: %s)", unknown.Name, strings.Join(unknown.Known, ", "))
	case errors.As(err, &stopped):
		return fmt.Sprintf("%v; continue it with agentctl continue %s", stopped, stopped.RunID)
	case errors.As(err, &notReady):
		return fmt.Sprintf("run %s is %s: only a run that stalled, one left running by a stopped process, or one whose calls were decided with --detach, can be continued",
			notReady.RunID, notReady.Status)
	case errors.Is(err, engine.ErrOneCall):
		return "--args and --data apply to one call: choose it with --call"
	case errors.As(err, &choose):
		ids := make([]string, len(choose.Waiting))
		for i, c := range choose.Waiting {
			ids[i] = c.ID + " (" + c.Tool + ")"
		}
		return fmt.Sprintf("run %s has %d calls waiting for %s; choose one with --call, or --all: %s",
			choose.RunID, len(choose.Waiting), engine.WaitsFor(choose.Kind), strings.Join(ids, ", "))
	case errors.As(err, &wrong):
		return phraseWrongCall(wrong)
	case errors.As(err, &input):
		return phraseInput(input)
	case errors.As(err, &conflict) && conflict.Status == store.CallPending && conflict.Kind == store.KindSuspend:
		return err.Error() + ": use agentctl resume (or decline)"
	case errors.As(err, &conflict) && conflict.Status == store.CallPending && conflict.Kind == store.KindApproval:
		return err.Error() + ": use agentctl approve or decline"
	case errors.As(err, &busy):
		// SQLite waits for a write lock as long as AGENTCTL_BUSY_TIMEOUT.
		return strings.Replace(err.Error(), "; nothing was changed", busyHint+"; nothing was changed", 1)
	case errors.Is(err, store.ErrCorrupt):
		return err.Error() + "; agentctl doctor checks it; restore it from a backup"
	case errors.Is(err, store.ErrOldSchema):
		return err.Error() + "; this command only reads: upgrade it with agentctl migrate (same --db)"
	}
	return err.Error()
}

func phraseWrongCall(e *engine.WrongCallError) string {
	switch {
	case e.Status == store.CallInterrupted:
		return fmt.Sprintf("call %s of run %s was interrupted (its process stopped) and may or may not have taken effect: use agentctl retry or resolve", e.CallID, e.RunID)
	case e.Want == store.KindInterrupted:
		return fmt.Sprintf("call %s of run %s was not interrupted: it waits for %s", e.CallID, e.RunID, e.Kind)
	case e.Kind == store.KindDelegation && len(e.Instead) > 0:
		ids := make([]string, len(e.Instead))
		for i, c := range e.Instead {
			ids[i] = c.ID + " (" + c.Tool + ")"
		}
		return fmt.Sprintf("call %s of run %s is a delegation waiting for its sub-agent: decide the sub-agent's calls: %s",
			e.CallID, e.RunID, strings.Join(ids, ", "))
	case e.Kind == store.KindDelegation:
		return fmt.Sprintf("call %s of run %s is a delegation waiting for its sub-agent: decide the sub-agent's calls", e.CallID, e.RunID)
	}
	return phrase(&store.ConflictError{RunID: e.RunID, CallID: e.CallID, Status: e.Status, Kind: e.Kind})
}

func phraseInput(e *engine.InputError) string {
	if e.Field == engine.InputReason {
		return fmt.Sprintf("call %s (%s) needs a reason: its tool's requireReason asks every decision for one: pass --reason TEXT; nothing was recorded", e.CallID, e.Tool)
	}
	if e.Field == engine.InputArgs {
		switch e.Problem {
		case engine.ProblemNoTool:
			return fmt.Sprintf("--args for call %s: the agent has no tool %q", e.CallID, e.Tool)
		case engine.ProblemViolations:
			return fmt.Sprintf("--args for call %s (%s) break its input schema:%v", e.CallID, e.Tool, e.Err)
		}
		return fmt.Sprintf("--args for call %s: not a JSON object", e.CallID)
	}
	switch e.Problem {
	case engine.ProblemMissing:
		return fmt.Sprintf("resume call %s: no data: pass --data JSON or --data-file FILE", e.CallID)
	case engine.ProblemNotJSON:
		return fmt.Sprintf("resume data for call %s: invalid JSON: %v", e.CallID, e.Err)
	case engine.ProblemViolations:
		return fmt.Sprintf("resume data for call %s (%s) breaks its resumeSchema:%v", e.CallID, e.Tool, e.Err)
	}
	return fmt.Sprintf("resume data for call %s: want a JSON object", e.CallID)
}

// addFixes says, for each finding of a doctor report that needs a human,
// which command deals with it.
func addFixes(r *sqlstore.Report) {
	for i, f := range r.Findings {
		if f.Status == sqlstore.FindingError {
			continue
		}
		switch {
		case f.Status == sqlstore.FindingOK && f.Check != "schema":
		case f.Check == "stopped runs":
			r.Findings[i].Fix = "agentctl continue RUNID"
		case f.Check == "stalled runs":
			r.Findings[i].Fix = "agentctl continue RUNID, once what failed is fixed (agentctl show RUNID says what failed)"
		case f.Check == "interrupted calls":
			r.Findings[i].Fix = "agentctl retry RUNID --call ID, or agentctl resolve"
		case f.Check == "overdue approvals":
			r.Findings[i].Fix = "agentctl expire"
		case f.Check == "schema" && f.Status == sqlstore.FindingWarn:
			r.Findings[i].Fix = "upgrade it with agentctl migrate (any command that writes also does)"
		case f.Check == "schema" && r.Schema == 0:
			r.Findings[i].Fix = "the next command that writes sets it up"
		}
	}
}

// rightCommand returns, for a decision of the wrong kind on a waiting
// call, the command that decides it, runnable as printed; "" otherwise.
func (a *app) rightCommand(err error) string {
	var wrong *engine.WrongCallError
	if !errors.As(err, &wrong) || wrong.Status != store.CallPending {
		return ""
	}
	run := wrong.RunID
	if len(a.engines) > 0 {
		if s, err := a.engines[len(a.engines)-1].ShortID(context.Background(), run); err == nil {
			run = s
		}
	}
	switch {
	case wrong.Kind == store.KindSuspend && wrong.Want != store.KindSuspend:
		return fmt.Sprintf("resume it: %s resume %s --call %s --data '%s'", a.hintCmd(), run, wrong.CallID, hintData(wrong.ResumeSchema))
	case wrong.Kind == store.KindApproval && wrong.Want != store.KindApproval:
		return fmt.Sprintf("approve it: %s approve %s --call %s", a.hintCmd(), run, wrong.CallID)
	}
	return ""
}
