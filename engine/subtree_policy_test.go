package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
)

const subtreeSpec = `
version: 1
policy: {delegates: [bot]}
models:
  lead:
    provider: scripted
    turns:
      - toolCalls: [{tool: checker, args: {task: check}}]
      - text: "${{ results[0] }}"
  check:
    provider: scripted
    turns:
      - toolCalls: [{tool: status, args: {}}]
      - text: "${{ results[0] }}"
  guard:
    provider: scripted
    turns:
      - toolCalls: [{tool: dba, args: {task: drop}}]
      - text: "${{ results[0] }}"
  dba:
    provider: scripted
    turns:
      - toolCalls: [{tool: drop, args: {}}]
      - text: "${{ results[0] }}"
  top:
    provider: scripted
    turns:
      - toolCalls: [{tool: middle, args: {task: go}}]
      - text: "${{ results[0] }}"
  mid:
    provider: scripted
    turns:
      - toolCalls: [{tool: checker, args: {task: check}}]
      - text: "${{ results[0] }}"
tools:
  status: {input: {type: object}, output: active}
  drop: {input: {type: object}, output: dropped, requireApproval: true, approvers: [alice, erin]}
agents:
  lead: {model: lead, agents: [checker], requireToolApproval: true, approvers: [alice, bob], separateDuties: true}
  checker: {model: check, tools: [status]}
  guard: {model: guard, agents: [dba], requireToolApproval: true, approvers: [alice, dave]}
  dba: {model: dba, tools: [drop]}
  top: {model: top, agents: [middle], requireToolApproval: true, approvers: [alice]}
  middle: {model: mid, agents: [checker], approvers: [zed]}
`

// waiting starts a run of agent in g, started by starter, and wants it
// waiting for a human.
func waiting(t *testing.T, e *Engine, g *Graph, agent, starter string) *RunView {
	t.Helper()
	v, err := e.Start(context.Background(), g, StartOptions{Agent: agent, Input: "x", StartedBy: starter})
	if err != nil || v.Status != store.Suspended || len(v.Pending) != 1 {
		t.Fatalf("start %s: %v %v", agent, v, err)
	}
	return v
}

// try is an approval to attempt, and why it is refused.
type try struct {
	d   Decision
	why string
}

// refusals tries each approval on run id and wants each refused, for the
// reason given.
func refusals(t *testing.T, e *Engine, id string, tries ...try) {
	t.Helper()
	for _, x := range tries {
		d, why := x.d, x.why
		d.RunID, d.Action = id, store.Approve
		_, err := e.Decide(context.Background(), d)
		var fe *store.ForbiddenError
		if !errors.As(err, &fe) || !strings.Contains(fe.Reason, why) {
			t.Errorf("approve by %s as %q: %v, want forbidden: %s", d.OSUser, d.By, err, why)
		}
	}
}

// A supervisor's requireToolApproval holds every call of its subtree,
// and its policy comes with it: its approvers and separateDuties decide
// a sub-agent's call that needs no approval of its own. The gate names
// the supervisor, and who may decide says so.
func TestSupervisorPolicy(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	g := compile(t, subtreeSpec)
	e := New(db, Config{})
	v := waiting(t, e, g, "lead", "bob")
	p := v.Pending[0]
	if got := p.Gate.Phrase(); got != "required by requireToolApproval of supervisor lead" {
		t.Errorf("gate: %q", got)
	}
	refusals(t, e, v.RunID,
		try{Decision{OSUser: "carol"}, "carol is not an approver (approvers of supervisor lead, whose requireToolApproval holds the call: alice, bob)"},
		try{Decision{OSUser: "bob"}, "(separateDuties of supervisor lead)"},
		try{Decision{OSUser: "bot", By: "bob"}, "bob started run"},
	)
	d, err := e.Detail(ctx, v.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if p := d.Pending[0]; p.MayDecide() != "alice, bob" || p.NotBy != "bob" {
		t.Errorf("may decide %q, not by %q", p.MayDecide(), p.NotBy)
	}
	if len(d.Decisions) != 3 || d.Decisions[0].Action != store.Refused {
		t.Errorf("decisions: %+v", d.Decisions)
	}
	if v, err = e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "alice"}); err != nil || v.Output != "active" {
		t.Fatalf("alice approves: %v %v", v, err)
	}
}

// A call that its own tool's policy and a supervisor's gate both hold is
// approved only by someone both policies name, declined by someone
// either names; an agent between them that gates nothing adds no
// policy; a server's approvers role stands in only when no policy names
// approvers.
func TestSupervisorAndOwnPolicy(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	g := compile(t, subtreeSpec)
	e := New(db, Config{})
	v := waiting(t, e, g, "guard", "zed")
	refusals(t, e, v.RunID,
		try{Decision{OSUser: "dave"}, "dave is not an approver (approvers: alice, erin)"},
		try{Decision{OSUser: "erin"}, "erin is not an approver (approvers of supervisor guard, whose requireToolApproval holds the call: alice, dave)"},
		try{Decision{OSUser: "carol", Auth: &Authority{Approvers: spec.Approvers{Users: []string{"carol"}}}}, "carol is not an approver (approvers: alice, erin)"},
	)
	_, tr, err := e.load(ctx, v.RunID)
	if err != nil || len(tr.order) != 2 {
		t.Fatalf("tree: %v", err)
	}
	child := tr.order[1]
	who, err := e.Deciders(ctx, child, callsOf(tr.calls, child.ID)[0])
	if err != nil || who.String() != "one of alice, erin who is also one of alice, dave" || who.NotBy != "" {
		t.Errorf("deciders %q (not by %q): %v", who, who.NotBy, err)
	}
	if !who.Names("alice", nil) || who.Names("dave", nil) || who.Names("erin", nil) {
		t.Errorf("Names: alice %v, dave %v, erin %v", who.Names("alice", nil), who.Names("dave", nil), who.Names("erin", nil))
	}
	if v, err = e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "alice"}); err != nil || v.Output != "dropped" {
		t.Fatalf("alice approves: %v %v", v, err)
	}
	// Declining runs nothing: one policy's approver may (as one decline
	// ends a four-eyes call), nobody else.
	v = waiting(t, e, g, "guard", "zed")
	if _, err := e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Decline, OSUser: "carol"}); !errors.Is(err, store.ErrForbidden) {
		t.Errorf("carol declines: %v, want forbidden", err)
	}
	if v, err = e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Decline, OSUser: "dave"}); err != nil || !strings.Contains(v.Output, "declined") {
		t.Errorf("dave declines: %v %v", v, err)
	}

	// Two levels down: top gates; middle names approvers but gates nothing.
	v = waiting(t, e, g, "top", "zed")
	refusals(t, e, v.RunID,
		try{Decision{OSUser: "zed"}, "zed is not an approver (approvers of supervisor top, whose requireToolApproval holds the call: alice)"},
	)
	if v, err = e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "alice"}); err != nil || v.Output != "active" {
		t.Fatalf("alice approves two levels down: %v %v", v, err)
	}
}
