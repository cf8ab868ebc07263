package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

// chaosTally is what check counted, for the report.
type chaosTally struct {
	executions, interrupted, declined, succeeded int
}

// check verifies the invariants on every run in the database, read with
// agentctl show -o json, against the ledger and the deciders' answers.
func (h *harness) check() chaosTally {
	t := h.c.t
	var tally chaosTally
	ledger := readLedger(h.c.ledger)
	tally.executions = len(ledger)
	execs := map[string][]ledgerEntry{} // by "run call"
	for _, e := range ledger {
		execs[e.run+" "+e.call] = append(execs[e.run+" "+e.call], e)
	}
	approved := map[string]bool{}
	byReason := map[string]engine.DecisionView{}
	runs := h.list()
	if runs == nil {
		t.Fatal("agentctl list fails after the faults")
	}
	for _, v := range runs {
		if !atRest(v) {
			t.Errorf("run %s left %s (%d pending) after the faults ended", v.RunID, v.Status, len(v.Pending))
		}
		d := h.show(v.RunID)
		decided := map[string][]engine.DecisionView{}
		for _, dv := range d.Decisions {
			if dv.Action == store.Approve || dv.Action == store.Decline {
				decided[dv.CallID] = append(decided[dv.CallID], dv)
				byReason[dv.Reason] = dv
			}
		}
		for _, call := range d.Calls {
			key := v.RunID + " " + call.CallID
			ds := decided[call.CallID]
			n := len(execs[key])
			switch {
			case len(ds) == 0 && contains(h.runs, v.RunID):
				t.Errorf("run %s call %s: no decision on record (status %s)", v.RunID, call.CallID, call.Status)
			case len(ds) > 1:
				t.Errorf("run %s call %s: %d decisions on record, want 1", v.RunID, call.CallID, len(ds))
			case len(ds) == 1 && ds[0].Action == store.Decline:
				tally.declined++
				if n != 0 || call.Status != store.CallDeclined {
					t.Errorf("run %s call %s: declined, and it ran %d times (status %s)", v.RunID, call.CallID, n, call.Status)
				}
			case len(ds) == 1:
				approved[key] = true
				h.checkApproved(v.RunID, call, execs[key], &tally)
			}
		}
	}
	for key, es := range execs {
		if !approved[key] {
			t.Errorf("run/call %s ran %d times without an approval on record", key, len(es))
		}
	}
	h.checkDeciders(byReason)
	return tally
}

// checkApproved: an approved call ran exactly once and succeeded, or is
// interrupted, ran at most once, and its process is gone.
func (h *harness) checkApproved(run string, call engine.CallView, es []ledgerEntry, tally *chaosTally) {
	t := h.c.t
	switch call.Status {
	case store.CallSucceeded:
		tally.succeeded++
		if len(es) != 1 {
			t.Errorf("run %s call %s: succeeded, and ran %d times (want exactly once)", run, call.CallID, len(es))
		}
	case store.CallInterrupted:
		tally.interrupted++
		if len(es) > 1 {
			t.Errorf("run %s call %s: interrupted, and ran %d times (want at most once)", run, call.CallID, len(es))
		}
		for _, e := range es {
			if toolAlive(e.pid, h.c.ledger) {
				t.Errorf("run %s call %s: interrupted, and its process %d is still there", run, call.CallID, e.pid)
			}
		}
	default:
		t.Errorf("run %s call %s: approved, and left %s after running %d times", run, call.CallID, call.Status, len(es))
	}
}

// checkDeciders: every decision answered as made (2xx, exit 0 or 3) is
// on record as made; none answered as lost (409, exit 4) is, unless an
// attempt before may have been recorded; none gave up.
func (h *harness) checkDeciders(byReason map[string]engine.DecisionView) {
	t := h.c.t
	for _, d := range h.deciders {
		dv, recorded := byReason[d.reason]
		switch {
		case d.outcome == "gave-up":
			t.Errorf("run %s: %s %s via %s: no definite answer in %d attempts (last: %s)", d.run, d.action, d.reason, d.via, d.attempts, d.last)
		case d.outcome == "won" && !recorded:
			t.Errorf("run %s: %s via %s answered done (%s), and is not on record: decision lost", d.run, d.action, d.via, d.last)
		case d.outcome == "won" && string(dv.Action) != d.action:
			t.Errorf("run %s call %s: %s via %s answered done, and %s is on record", d.run, dv.CallID, d.action, d.via, dv.Action)
		case d.outcome == "lost" && recorded && !d.unsure:
			t.Errorf("run %s call %s: %s via %s answered lost (%s), and it is on record", d.run, dv.CallID, d.action, d.via, d.last)
		}
	}
}

// show is agentctl show -o json of a run, through the database directly.
func (h *harness) show(id string) *engine.RunDetail {
	out, errOut, err := h.c.cli(h.c.direct, "show", id, "-o", "json")
	var d engine.RunDetail
	if err != nil || json.Unmarshal([]byte(out), &d) != nil {
		h.c.t.Fatalf("show %s: %v %s", id, err, errOut)
	}
	return &d
}

// report prints the figures of the run.
func (h *harness) report(tally chaosTally, elapsed time.Duration) {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos: %v, seed %d, lease %v, 3 workers and serve\n", elapsed.Round(time.Second), h.cfg.seed, h.cfg.lease)
	fmt.Fprintf(&b, "  runs          %d (%d over HTTP, %d with the CLI)\n", len(h.runs), h.started[0], h.started[1])
	for _, via := range []string{"http", "cli"} {
		var n, won, lost, unsure, attempts int
		for _, d := range h.deciders {
			if d.via != via {
				continue
			}
			n++
			attempts += d.attempts
			switch d.outcome {
			case "won":
				won++
			case "lost":
				lost++
			}
			if d.unsure {
				unsure++
			}
		}
		lostAs := map[string]string{"http": "409", "cli": "exit 4"}[via]
		fmt.Fprintf(&b, "  deciders %-4s %d: %d won, %d lost the race (%s), %d repeated after no answer (%d attempts)\n", via, n, won, lost, lostAs, unsure, attempts)
	}
	var kinds []string
	for _, k := range faultKinds() {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, h.faults[k]))
	}
	fmt.Fprintf(&b, "  faults        %s\n", strings.Join(kinds, ", "))
	fmt.Fprintf(&b, "  calls         %d executions, %d succeeded, %d interrupted, %d declined\n", tally.executions, tally.succeeded, tally.interrupted, tally.declined)
	for _, k := range faultKinds() {
		ds := h.recovery[k]
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		fmt.Fprintf(&b, "  recovery %-12s min %v, median %v, max %v\n", k, ds[0].Round(10*time.Millisecond), ds[len(ds)/2].Round(10*time.Millisecond), ds[len(ds)-1].Round(10*time.Millisecond))
	}
	h.c.t.Log("\n" + b.String())
}
