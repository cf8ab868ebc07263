package store

import "strings"

// Plain names the tools of an agent, in a spec snapshot, that run with
// nothing evaluated first: tools, not sub-agents, whose declaration has
// no suspend or skip condition. A worker's claim may start their calls
// (ClaimStart). Decl is a declaration's name: it covers the tool of that
// name and the tools DECL.NAME it provides (an MCP server's).
type Plain struct {
	SpecHash string
	Agent    string
	Decl     string
}

// Claimed is a run ClaimStart claimed, held by the lease it was given,
// with its calls.
type Claimed struct {
	Run *Run
	// Calls are the run's calls in order, as the claim left them.
	Calls []*Call
	// Started is the call the claim moved on to executing; "" when none.
	// It is the approved call of the run's latest step (Run.Step) with
	// the lowest sequence number, the call the run's holder runs first,
	// provided its tool is among the plain tools given for the run's
	// spec snapshot and agent, and it has its approval on record: it
	// needed none (its gate's verdict is not required) or has one
	// counted (Approvals). Any other call, or none, is left as it was.
	Started string
}

// Startable is the call a claim of run r, whose calls are calls, starts
// (see Claimed.Started); nil when none. plain are the plain tools given.
func Startable(r *Run, calls []*Call, plain []Plain) *Call {
	var first *Call
	for _, c := range calls {
		if c.Step == r.Step && c.Status == CallApproved && (first == nil || c.Seq < first.Seq) {
			first = c
		}
	}
	if first == nil || first.Gate.Verdict == GateRequired && first.Approvals == 0 {
		return nil
	}
	decl, _, _ := strings.Cut(first.Tool, ".")
	for _, p := range plain {
		if p.SpecHash == r.SpecHash && p.Agent == r.Agent && p.Decl == decl {
			return first
		}
	}
	return nil
}
