package spec

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const rulesSpec = `
version: 1
models:
  m: {provider: scripted, turns: [{text: hi}]}
tools:
  restart:
    input: {type: object, properties: {env: {type: string}, n: {}}}
    exec: {command: [echo]}
  ping:
    exec: {command: [echo]}
agents:
  ops: {model: m, tools: [restart, ping]}
policy:
  timezone: Europe/Berlin
  freezes:
    - {name: xmas, from: "2026-12-24", to: "2026-12-27", reason: xmas, tools: [restart]}
  rules:
    - {name: shadowed, when: '${{ input.env == "prod" }}', effect: deny, shadow: true}
    - {name: broken-allow, when: '${{ input.n > 3 }}', effect: allow}
    - {name: broken-deny, when: '${{ input.n > 3 && input.env == "x" }}', effect: deny}
    - {name: evenings, when: '${{ now.Hour() >= 18 }}', effect: require, approvals: 2}
    - {name: labelled, when: '${{ labels.change == nil }}', effect: require}
`

// TestRuleMatch pins the rules' semantics: freezes first, in their
// window (local time); the first matching rule decides; shadow rules are
// reported, never decide; a condition that fails to evaluate makes a
// deny or require rule apply (fails closed), never an allow rule.
func TestRuleMatch(t *testing.T) {
	s, err := Load([]Source{{Name: "s.yaml", Data: []byte(rulesSpec)}})
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	day := time.Date(2026, 12, 1, 10, 0, 0, 0, berlin)
	for _, c := range []struct {
		name, tool string
		input      map[string]any
		at         time.Time
		labels     map[string]string
		want       string
		shadows    int
		failed     bool
	}{
		{"freeze", "restart", map[string]any{"env": "prod"}, time.Date(2026, 12, 24, 0, 0, 0, 0, berlin), nil, "xmas", 1, false},
		{"before the freeze, local time", "restart", map[string]any{"env": "dev", "n": 1}, time.Date(2026, 12, 23, 23, 59, 0, 0, berlin), map[string]string{"change": "c"}, "evenings", 0, false},
		{"freeze covers its tools only", "ping", nil, time.Date(2026, 12, 25, 10, 0, 0, 0, berlin), map[string]string{"change": "c"}, "", 0, false},
		{"shadow does not decide", "restart", map[string]any{"env": "prod", "n": 1}, day, map[string]string{"change": "c"}, "", 1, false},
		{"allow that fails does not apply", "restart", map[string]any{"n": "many"}, day, map[string]string{"change": "c"}, "broken-deny", 0, true},
		{"a missing field fails closed", "restart", map[string]any{"env": "x"}, day, nil, "broken-deny", 0, true},
		{"labels", "restart", map[string]any{"env": "dev", "n": 1}, day, nil, "labelled", 0, false},
	} {
		m, shadows := s.Policy.Match(RuleCall{Tool: c.tool, Decl: c.tool, Agent: "ops", Input: c.input, At: c.at, Labels: c.labels})
		got := ""
		if m != nil {
			got = m.Rule.Name
			if (m.Err != nil) != c.failed {
				t.Errorf("%s: error %v, want failed %v", c.name, m.Err, c.failed)
			}
		}
		if got != c.want || len(shadows) != c.shadows {
			t.Errorf("%s: decided by %q with %d shadows, want %q with %d", c.name, got, len(shadows), c.want, c.shadows)
		}
	}
}

// TestOnCallOnlyWhereResolved: an on-call source is read as a call of a
// tool or agent that names it starts waiting; in a rule's approvers or an
// escalation step's addApprovers nothing reads it, and a rule naming only
// one would add no approver at all, so validate refuses it there.
func TestOnCallOnlyWhereResolved(t *testing.T) {
	const oc = `[{oncall: {pagerduty: {schedule: P1, token: "${{ env.PD }}"}}}]`
	for name, policy := range map[string]string{
		"rule":       `rules: [{name: r, when: true, effect: require, approvers: ` + oc + `}]`,
		"escalation": `escalation: [{after: 5m, addApprovers: ` + oc + `}]`,
	} {
		src := "version: 1\nmodels:\n  m: {provider: scripted, turns: [{text: hi}]}\ntools:\n  ping: {exec: {command: [echo]}, requireApproval: true}\n" +
			"agents:\n  ops: {model: m, tools: [ping]}\npolicy:\n  " + policy + "\n"
		_, err := Load([]Source{{Name: "s.yaml", Data: []byte(src)}})
		if err == nil || !strings.Contains(err.Error(), "oncall") {
			t.Errorf("%s: on-call approvers accepted (%v), want refused", name, err)
		}
	}
}

// TestNamesOfEscalation: the names an escalation step adds as approvers
// are names the spec gives, as its tools' and rules' approvers are.
func TestNamesOfEscalation(t *testing.T) {
	src := "version: 1\nmodels:\n  m: {provider: scripted, turns: [{text: hi}]}\ntools:\n  ping: {exec: {command: [echo]}, requireApproval: true, escalation: [{after: 5m, addApprovers: [carol]}]}\n" +
		"agents:\n  ops: {model: m, tools: [ping], escalation: [{after: 5m, addApprovers: [dave]}]}\npolicy:\n  escalation: [{after: 5m, addApprovers: [group:sre]}]\n"
	s, err := Load([]Source{{Name: "s.yaml", Data: []byte(src)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"carol", "dave", "sre"} {
		if !slices.Contains(s.Names(), n) {
			t.Errorf("Names() = %v, want %s in it", s.Names(), n)
		}
	}
}
