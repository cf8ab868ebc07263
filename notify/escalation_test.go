package notify

import (
	"strings"
	"testing"
)

// An escalated notification says its step: in the webhook body, the
// summary and the Slack message, whose buttons stay until a step
// decides the call.
func TestEscalatedMessage(t *testing.T) {
	m := &Message{ID: "ntf_1", Type: Escalated, Run: Run{ID: "01M92DQQVAMG13NQ36ZBCA6BWV", Agent: "ops"},
		Call:       &Call{ID: "call_1", Tool: "restart", Kind: "approval", Approvers: []string{"alice", "group:sre-leads"}},
		Escalation: &EscalationStep{Step: 2, After: "1h", Kind: "addApprovers", Approvers: []string{"group:sre-leads"}}}
	body := string(m.Body())
	for _, want := range []string{`"type":"call.escalated"`, `"escalation":{"step":2,"after":"1h","kind":"addApprovers","approvers":["group:sre-leads"]}`} {
		if !strings.Contains(body, want) {
			t.Errorf("body %s lacks %s", body, want)
		}
	}
	if s := m.Summary(); s != "still waiting for approval: restart in run 01M92DQQVAMG13NQ36ZBCA6BWV (ops), step 2 (after 1h): group:sre-leads may decide too" {
		t.Errorf("summary %q", s)
	}
	slack := string(SlackBody(m))
	if !strings.Contains(slack, "Still waiting for approval: restart") || !strings.Contains(slack, "Escalation step 2 (after 1h): group:sre-leads may decide too") {
		t.Errorf("slack %s", slack)
	}
	if actionsOf(m) == nil {
		t.Error("a reminder has no buttons")
	}
	m.Escalation = &EscalationStep{Step: 3, After: "4h", Kind: "decide", Decide: "decline", Reason: "no answer"}
	if actionsOf(m) != nil {
		t.Error("a step that declined the call keeps its buttons")
	}
	if s := string(SlackBody(m)); !strings.Contains(s, "Escalated and decided: restart") || !strings.Contains(s, "declined by agentctl: no answer") {
		t.Errorf("slack %s", s)
	}
}
