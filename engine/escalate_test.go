package engine

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlite"
)

const ladder = `
version: 1
models:
  script:
    provider: scripted
    turns:
      - toolCalls: [{tool: restart, args: {service: web}}]
      - text: "told: ${{ results[0] }}"
tools:
  restart:
    input: {type: object, properties: {service: {type: string}}}
    output: restarted
    requireApproval: true
    approvers: [alice]
agents:
  ops:
    model: script
    tools: [restart]
    escalation:
      - {after: 15m, remind: true}
      - {after: 1h, addApprovers: [bob]}
      - {after: 4h, decide: decline, reason: no decision within 4h}
`

// ladderEnv is a database on a test clock, with handles on it standing
// for processes.
type ladderEnv struct {
	t    *testing.T
	path string
	mu   sync.Mutex
	now  time.Time
}

func newLadderEnv(t *testing.T) *ladderEnv {
	return &ladderEnv{t: t, path: filepath.Join(t.TempDir(), "a.db"), now: time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)}
}

func (l *ladderEnv) clock() time.Time { l.mu.Lock(); defer l.mu.Unlock(); return l.now }
func (l *ladderEnv) add(d time.Duration) {
	l.mu.Lock()
	l.now = l.now.Add(d)
	l.mu.Unlock()
}

// engine opens a new handle and an engine on it: a process.
func (l *ladderEnv) engine() *Engine {
	l.t.Helper()
	db, err := sqlite.Open(context.Background(), l.path, sqlite.Options{Now: l.clock})
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { db.Close() })
	return New(db, Config{Now: l.clock})
}

// escalated returns the steps of the escalated events of run id.
func escalatedSteps(t *testing.T, e *Engine, id string) []int {
	t.Helper()
	evs, _, err := e.Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, ev := range evs {
		if ev.Type == EventEscalated {
			var f EscalatedEvent
			if err := json.Unmarshal(ev.Data, &f); err != nil {
				t.Fatal(err)
			}
			out = append(out, f.Step)
		}
	}
	return out
}

// start starts a run of agent ops of the ladder spec.
func (l *ladderEnv) start(e *Engine) string { return l.startOf(e, ladder, "ops") }

// startOf starts a run of agent of spec s.
func (l *ladderEnv) startOf(e *Engine, s, agent string) string {
	l.t.Helper()
	v, err := e.Start(context.Background(), compile(l.t, s), StartOptions{Agent: agent, Input: "go"})
	if err != nil {
		l.t.Fatal(err)
	}
	return v.RunID
}

// notWidened has steps 1 and 2 of run id's ladder happen (bob added),
// then wants bob refused and ok allowed.
func (l *ladderEnv) notWidened(e *Engine, id, ok string) {
	l.t.Helper()
	l.sweep(e, 2*time.Hour)
	if got := escalatedSteps(l.t, e, id); len(got) != 2 {
		l.t.Fatalf("steps %v, want 2", got)
	}
	if err := approve(e, id, "bob"); err == nil {
		l.t.Fatal("bob, added by an escalation, approved past approvers it may not widen")
	}
	if err := approve(e, id, ok); err != nil {
		l.t.Fatalf("%s, named by every policy: %v", ok, err)
	}
}

// sweep has e take what is due after d more.
func (l *ladderEnv) sweep(e *Engine, d time.Duration) {
	l.t.Helper()
	l.add(d)
	if _, err := e.ExpireAll(context.Background(), ""); err != nil {
		l.t.Fatal(err)
	}
}

// approve has by approve run id's call through e.
func approve(e *Engine, id, by string) error {
	_, err := e.Decide(context.Background(), Decision{RunID: id, Action: store.Approve, By: by, OSUser: by})
	return err
}

// race has engines sweep (ExpireAll) at once, several times each.
func race(t *testing.T, es ...*Engine) {
	var wg sync.WaitGroup
	for i := range 6 {
		e := es[i%len(es)]
		wg.Go(func() {
			if _, err := e.ExpireAll(context.Background(), ""); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// Each step of a ladder happens once, when due on the engine's clock,
// whichever of two processes sweeping at once takes it; the last one
// declines the call as agentctl, with its reason.
func TestEscalationStepsOnceAcrossRacingEngines(t *testing.T) {
	ctx := context.Background()
	l := newLadderEnv(t)
	a, b := l.engine(), l.engine()
	id := l.start(a)
	l.add(14 * time.Minute)
	race(t, a, b)
	if got := escalatedSteps(t, a, id); len(got) != 0 {
		t.Fatalf("before 15m: steps %v", got)
	}
	l.add(time.Minute)
	race(t, a, b)
	l.add(45 * time.Minute)
	race(t, a, b)
	if got := escalatedSteps(t, a, id); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("after 1h: steps %v, want [1 2]", got)
	}
	l.add(3 * time.Hour)
	race(t, a, b)
	if got := escalatedSteps(t, b, id); len(got) != 3 || got[2] != 3 {
		t.Fatalf("after 4h: steps %v, want [1 2 3]", got)
	}
	d, err := b.Detail(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != store.Completed || len(d.Decisions) != 1 || d.Decisions[0].By != Actor || d.Decisions[0].Reason != "no decision within 4h" {
		t.Fatalf("after the decide step: %s, decisions %+v", d.Status, d.Decisions)
	}
}

// A decision between two steps cancels the rest of the ladder.
func TestEscalationDecisionCancelsTheRest(t *testing.T) {
	l := newLadderEnv(t)
	e := l.engine()
	id := l.start(e)
	l.sweep(e, 20*time.Minute)
	if err := approve(e, id, "alice"); err != nil {
		t.Fatal(err)
	}
	l.sweep(e, 5*time.Hour)
	if got := escalatedSteps(t, e, id); len(got) != 1 {
		t.Fatalf("steps %v, want [1]: the approval ends the ladder", got)
	}
}

// A process that stops in the middle of a ladder leaves the rest to
// the next: it resumes where the ladder stands, and a step that added
// approvers lets them decide (and say so in Deciders and show).
func TestEscalationResumesAfterRestart(t *testing.T) {
	ctx := context.Background()
	l := newLadderEnv(t)
	first := l.engine()
	id := l.start(first)
	l.sweep(first, 30*time.Minute)
	if err := approve(first, id, "bob"); err == nil {
		t.Fatal("bob approved before the step that adds him")
	}
	next := l.engine() // a new process on the same database
	l.add(time.Hour)
	d, err := next.Detail(ctx, id) // reads take no step
	if err != nil {
		t.Fatal(err)
	}
	esc := d.Pending[0].Escalation
	if esc == nil || esc.Steps[0].At == nil || esc.Next() == nil || esc.Next().Step != 2 || !esc.Next().Due.Equal(l.clock().Add(-30*time.Minute)) {
		t.Fatalf("show: %+v", esc)
	}
	l.sweep(next, 0)
	if got := escalatedSteps(t, next, id); len(got) != 2 || got[1] != 2 {
		t.Fatalf("steps %v, want [1 2]", got)
	}
	r, _ := next.store.Run(ctx, id)
	calls, _ := next.store.Calls(ctx, id)
	who, err := next.Deciders(ctx, r, calls[0])
	if err != nil || who.String() != "alice, bob" {
		t.Fatalf("deciders %q, %v", who.String(), err)
	}
	if err := approve(next, id, "bob"); err != nil {
		t.Fatalf("bob, added by step 2: %v", err)
	}
}

// An addApprovers step widens the tool's approvers, never a policy
// rule's require: bob, added by the step, still is not one of the
// rule's approvers, so he may not approve; carol, in both, may.
func TestEscalationDoesNotWidenARule(t *testing.T) {
	l := newLadderEnv(t)
	e := l.engine()
	s := ladder + `
policy:
  rules:
    - {name: web-review, when: '${{ input.service == "web" }}', effect: require, approvers: [alice, carol]}
`
	s = strings.Replace(s, "approvers: [alice]", "approvers: [alice, carol]", 1)
	l.notWidened(e, l.startOf(e, s, "ops"), "carol")
}

// An addApprovers step widens the call's own approvers, never those of
// a supervisor whose requireToolApproval holds the call: bob, added by
// the sub-agent's ladder, is not one of the supervisor's, so he may
// not approve; dave, in both, may.
func TestEscalationDoesNotWidenASupervisor(t *testing.T) {
	l := newLadderEnv(t)
	e := l.engine()
	s := strings.Replace(ladder, "      - text: \"told: ${{ results[0] }}\"\n", "      - text: \"told: ${{ results[0] }}\"\n"+`  lead:
    provider: scripted
    turns:
      - toolCalls: [{tool: ops, args: {task: go}}]
      - text: "lead: ${{ results[0] }}"
`, 1)
	s = strings.Replace(s, "approvers: [alice]", "approvers: [alice, dave]", 1)
	s += "  boss: {model: lead, agents: [ops], requireToolApproval: true, approvers: [dave]}\n"
	l.notWidened(e, l.startOf(e, s, "boss"), "dave")
}

// An approver an addApprovers step added decides that call, not the
// tool's later ones: his approve --always, a grant that would let them
// run, is refused; his approval is not.
func TestEscalationApproverGrantsNothing(t *testing.T) {
	ctx := context.Background()
	l := newLadderEnv(t)
	e := l.engine()
	id := l.start(e)
	l.sweep(e, 2*time.Hour) // steps 1 and 2: bob added
	_, err := e.Decide(ctx, Decision{RunID: id, Action: store.Approve, By: "bob", OSUser: "bob", Always: true})
	if !errors.Is(err, store.ErrForbidden) {
		t.Fatalf("bob, added by an escalation, approves --always: %v, want forbidden", err)
	}
	if err := approve(e, id, "bob"); err != nil {
		t.Fatalf("bob approves the call: %v", err)
	}
}

// An approval that edits a call's arguments (--args) is held to the
// rules those arguments match: a deny rule refuses it, and a require
// rule the call was not gated by refuses it too, as its approvers and
// approvals were never asked.
func TestEditedArgsMeetTheRules(t *testing.T) {
	ctx := context.Background()
	l := newLadderEnv(t)
	e := l.engine()
	s := ladder + `
policy:
  rules:
    - {name: no-db, when: '${{ input.service == "db" }}', effect: deny, reason: never}
    - {name: api-review, when: '${{ input.service == "api" }}', effect: require, approvers: [carol], approvals: 2}
`
	for _, edit := range []string{`{"service":"db"}`, `{"service":"api"}`} {
		_, err := e.Decide(ctx, Decision{RunID: l.startOf(e, s, "ops"), Action: store.Approve, OSUser: "alice", Args: []byte(edit)})
		if !errors.Is(err, store.ErrForbidden) {
			t.Fatalf("alice approves with --args %s: %v, want forbidden", edit, err)
		}
	}
	v, err := e.Decide(ctx, Decision{RunID: l.startOf(e, s, "ops"), Action: store.Approve, OSUser: "alice", Args: []byte(`{"service":"cache"}`)})
	if err != nil || !strings.Contains(v.Output, "told") {
		t.Fatalf("alice approves with --args matching no rule: %v %v", v, err)
	}
}
