package store

import (
	"encoding/json"
	"strings"
)

// Gate is the approval gate's verdict on a call, decided once when the
// call was made and kept with it: whether it waits for a human, and why.
// It is stored as its JSON; a front end phrases it.
type Gate struct {
	Verdict Verdict  `json:"verdict,omitempty"` // "" when nothing was worth recording
	Reasons []Reason `json:"reasons,omitempty"`
	// OnCall is who was on call on each schedule the call's approvers
	// name, read as the call started waiting (docs/oncall.md).
	OnCall []OnCall `json:"onCall,omitempty"`
	// Rule is the policy rule that decided the call, if one did.
	Rule *RuleRecord `json:"rule,omitempty"`
	// Shadow are the shadow rules that matched: what they would have
	// decided, not enforced.
	Shadow []RuleRecord `json:"shadow,omitempty"`
	// Preview is what the tool's preview showed for the call, run as it
	// started waiting (or again: a drift, a retry).
	Preview *Preview `json:"preview,omitempty"`
	// Drift, when set, is the preview approved before, which a run just
	// before execution contradicted: the call waits for a new decision.
	Drift *Drift `json:"drift,omitempty"`
}

// Verdict is what the gate decided.
type Verdict string

// Verdicts.
const (
	// GateRequired: the call waits for approval; Reasons say what
	// requires it.
	GateRequired Verdict = "required"
	// GateGranted: a human approved the tool for the rest of the run;
	// Reasons say what would have required approval.
	GateGranted Verdict = "granted"
	// GateFree: no approval needed; Reasons say why.
	GateFree Verdict = "free"
	// GateDelegation: a call to a sub-agent, whose own calls pass their
	// gates (Reasons: the sub-agent).
	GateDelegation Verdict = "delegation"
)

// Reason is one reason of a verdict: a kind and, for some kinds, a
// detail.
type Reason struct {
	Kind   ReasonKind `json:"kind"`
	Detail string     `json:"detail,omitempty"`
}

// ReasonKind is why a gate decided as it did.
type ReasonKind string

// Reason kinds.
const (
	ReasonTool      ReasonKind = "tool"      // the tool's requireApproval is true
	ReasonCondition ReasonKind = "condition" // the tool's requireApproval expression (Detail) held
	ReasonServer    ReasonKind = "server"    // the MCP server's requireApproval (Detail) held
	ReasonFailed    ReasonKind = "failed"    // the condition could not be evaluated: the gate fails closed
	ReasonAgent     ReasonKind = "agent"     // the agent requires approval of every tool call; Detail, when set, names the supervisor whose requireToolApproval holds its subtree
	ReasonRun       ReasonKind = "run"       // the run requires approval of every tool call
	ReasonFalse     ReasonKind = "false"     // the condition (Detail) was false
	ReasonReadOnly  ReasonKind = "read-only" // the MCP server marks the tool (Detail) read-only
	ReasonSubAgent  ReasonKind = "sub-agent" // the sub-agent (Detail) delegated to
	ReasonUpload    ReasonKind = "upload"    // the spec was uploaded with the run, by Detail: every call waits (uploads.requireApproval)
	ReasonText      ReasonKind = "text"      // recorded as text (Detail) by an agentctl before schema 7
)

// Zero reports whether the gate recorded nothing.
func (g Gate) Zero() bool {
	return g.Verdict == "" && len(g.Reasons) == 0 && g.Rule == nil && len(g.Shadow) == 0 && g.Preview == nil && g.Drift == nil
}

// EncodeGate is how a gate is stored: its JSON, "" for none.
func EncodeGate(g Gate) string {
	if g.Zero() {
		return ""
	}
	b, _ := json.Marshal(g)
	return string(b)
}

// DecodeGate reads a stored gate: its JSON, or the text agentctl recorded
// before gates were typed.
func DecodeGate(s string) Gate {
	if s == "" {
		return Gate{}
	}
	var g Gate
	if strings.HasPrefix(s, "{") && json.Unmarshal([]byte(s), &g) == nil {
		return g
	}
	return parseGateText(s)
}

// parseGateText reads the gate text of older agentctl versions.
func parseGateText(s string) Gate {
	if rest, ok := strings.CutPrefix(s, "required by "); ok {
		return Gate{Verdict: GateRequired, Reasons: parseReasons(rest)}
	}
	if rest, ok := strings.CutPrefix(s, "approved for the rest of the run (approve --always); would need: "); ok {
		return Gate{Verdict: GateGranted, Reasons: parseReasons(strings.TrimPrefix(rest, "required by "))}
	}
	if rest, ok := strings.CutPrefix(s, "delegation to sub-agent "); ok {
		return Gate{Verdict: GateDelegation, Reasons: []Reason{{Kind: ReasonSubAgent, Detail: rest}}}
	}
	if rest, ok := strings.CutPrefix(s, "not required: requireApproval "); ok && strings.HasSuffix(rest, " is false") {
		return Gate{Verdict: GateFree, Reasons: []Reason{{Kind: ReasonFalse, Detail: strings.TrimSuffix(rest, " is false")}}}
	}
	if rest, ok := strings.CutPrefix(s, "not required: the server marks "); ok && strings.HasSuffix(rest, " read-only (autoApproveReadOnly)") {
		return Gate{Verdict: GateFree, Reasons: []Reason{{Kind: ReasonReadOnly, Detail: strings.TrimSuffix(rest, " read-only (autoApproveReadOnly)")}}}
	}
	return Gate{Reasons: []Reason{{Kind: ReasonText, Detail: s}}}
}

// parseReasons reads "tool requireApproval, run --require-approval", ...
// A condition may hold ", ": what is not a known reason joins the one
// before it.
func parseReasons(s string) []Reason {
	var out []Reason
	for _, part := range strings.Split(s, ", ") {
		switch {
		case part == "tool requireApproval":
			out = append(out, Reason{Kind: ReasonTool})
		case part == "requireApproval failed to evaluate":
			out = append(out, Reason{Kind: ReasonFailed})
		case part == "agent requireToolApproval":
			out = append(out, Reason{Kind: ReasonAgent})
		case part == "run --require-approval":
			out = append(out, Reason{Kind: ReasonRun})
		case strings.HasPrefix(part, "mcp requireApproval "):
			out = append(out, Reason{Kind: ReasonServer, Detail: strings.TrimPrefix(part, "mcp requireApproval ")})
		case strings.HasPrefix(part, "requireApproval "):
			out = append(out, Reason{Kind: ReasonCondition, Detail: strings.TrimPrefix(part, "requireApproval ")})
		case len(out) > 0 && out[len(out)-1].Detail != "":
			out[len(out)-1].Detail += ", " + part
		default:
			out = append(out, Reason{Kind: ReasonText, Detail: part})
		}
	}
	return out
}

// Phrase says why a call needed approval, or none, as show and the
// inbox say it: "required by tool requireApproval".
func (g Gate) Phrase() string {
	why := make([]string, len(g.Reasons))
	for i, r := range g.Reasons {
		why[i] = r.phrase()
	}
	all := strings.Join(why, ", ")
	switch g.Verdict {
	case GateRequired:
		return "required by " + all + phraseOnCall(g.OnCall) + g.ruleReason()
	case GateGranted:
		return "approved for the rest of the run (approve --always); would need: " + all
	case GateDelegation:
		return "delegation to sub-agent " + g.detail()
	case GateDenied:
		if g.Rule != nil {
			return g.Rule.Phrase()
		}
		return "denied by " + all
	case GateFree:
		if len(g.Reasons) == 1 && g.Reasons[0].Kind == ReasonReadOnly {
			return "not required: the server marks " + g.detail() + " read-only (autoApproveReadOnly)"
		}
		return "not required: " + all
	}
	return all + phraseOnCall(g.OnCall)
}

// phrase says one reason of a gate's verdict.
func (r Reason) phrase() string {
	switch r.Kind {
	case ReasonTool:
		return "tool requireApproval"
	case ReasonCondition:
		return "requireApproval " + r.Detail
	case ReasonServer:
		return "mcp requireApproval " + r.Detail
	case ReasonFailed:
		return "requireApproval failed to evaluate"
	case ReasonAgent:
		if r.Detail != "" {
			return "requireToolApproval of supervisor " + r.Detail
		}
		return "agent requireToolApproval"
	case ReasonRun:
		return "run --require-approval"
	case ReasonFalse:
		return "requireApproval " + r.Detail + " is false"
	case ReasonReadOnly:
		return r.Detail + " is read-only"
	case ReasonUpload:
		return "a spec uploaded by " + r.Detail + " (uploads.requireApproval: always)"
	case ReasonRule:
		return "rule " + r.Detail
	}
	return r.Detail
}

// detail is the detail of a gate's first reason.
func (g Gate) detail() string {
	if len(g.Reasons) == 0 {
		return ""
	}
	return g.Reasons[0].Detail
}
