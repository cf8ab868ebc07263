package store

import (
	"reflect"
	"testing"
)

// TestDecodeGate reads the gates older versions recorded as text, and
// the JSON of typed ones.
func TestDecodeGate(t *testing.T) {
	for text, want := range map[string]Gate{
		"": {},
		"required by tool requireApproval, run --require-approval": {Verdict: GateRequired, Reasons: []Reason{{Kind: ReasonTool}, {Kind: ReasonRun}}},
		`required by requireApproval ${{ input.a in ["x", "y"] }}, agent requireToolApproval`: {Verdict: GateRequired,
			Reasons: []Reason{{Kind: ReasonCondition, Detail: `${{ input.a in ["x", "y"] }}`}, {Kind: ReasonAgent}}},
		"required by requireApproval failed to evaluate":                                        {Verdict: GateRequired, Reasons: []Reason{{Kind: ReasonFailed}}},
		"required by mcp requireApproval true":                                                  {Verdict: GateRequired, Reasons: []Reason{{Kind: ReasonServer, Detail: "true"}}},
		"approved for the rest of the run (approve --always); would need: tool requireApproval": {Verdict: GateGranted, Reasons: []Reason{{Kind: ReasonTool}}},
		"delegation to sub-agent oncall":                                                        {Verdict: GateDelegation, Reasons: []Reason{{Kind: ReasonSubAgent, Detail: "oncall"}}},
		"not required: requireApproval ${{ input.n > 3 }} is false":                             {Verdict: GateFree, Reasons: []Reason{{Kind: ReasonFalse, Detail: "${{ input.n > 3 }}"}}},
		"not required: the server marks get read-only (autoApproveReadOnly)":                    {Verdict: GateFree, Reasons: []Reason{{Kind: ReasonReadOnly, Detail: "get"}}},
		"something else": {Reasons: []Reason{{Kind: ReasonText, Detail: "something else"}}},
	} {
		if got := DecodeGate(text); !reflect.DeepEqual(got, want) {
			t.Errorf("DecodeGate(%q) = %+v, want %+v", text, got, want)
		}
		if got := DecodeGate(EncodeGate(want)); !reflect.DeepEqual(got, want) {
			t.Errorf("round trip of %+v: %+v", want, got)
		}
	}
}
