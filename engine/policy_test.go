package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentctl/agentctl/engine/store"
)

const fourEyesSpec = `
version: 1
models:
  m:
    provider: scripted
    turns:
      - toolCalls: [{tool: drop, args: {db: orders}}]
      - text: "${{ results[0] }}"
tools:
  drop:
    input: {type: object, properties: {db: {type: string}}}
    output: "dropped ${{ input.db }}"
    requireApproval: true
    approvers: [ann, ben, cat, dan, eve]
    approvals: 2
    separateDuties: true
agents:
  dba: {model: m, tools: [drop]}
`

// Four-eyes under a race: approvers deciding the same call at once, from
// several engines (processes). The call runs once, after two distinct
// approvals; the starter and a repeated approver are refused.
func TestFourEyes(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	g := compile(t, fourEyesSpec)
	for round := range 10 {
		v, err := New(db, Config{}).Start(ctx, g, StartOptions{Agent: "dba", Input: "x", StartedBy: "ann"})
		if err != nil || v.Status != store.Suspended {
			t.Fatalf("start: %v %v", v, err)
		}
		// The starter may not approve.
		_, err = New(db, Config{}).Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "ann"})
		if !errors.Is(err, store.ErrForbidden) {
			t.Fatalf("round %d: the starter approving: %v", round, err)
		}
		// One approval, then the same person again.
		if v, err = New(db, Config{}).Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "ben"}); err != nil || v.Status != store.Suspended {
			t.Fatalf("round %d: first approval: %v %v", round, v, err)
		}
		if p := v.Pending[0]; p.Approvals != 1 || p.Needed != 2 {
			t.Fatalf("round %d: pending %+v", round, p)
		}
		if _, err := New(db, Config{}).Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "ben"}); !errors.Is(err, store.ErrForbidden) {
			t.Fatalf("round %d: ben again: %v", round, err)
		}
		// Three others race for the second approval: one completes it.
		var wg sync.WaitGroup
		var mu sync.Mutex
		won, lost := 0, 0
		for _, who := range []string{"cat", "dan", "eve"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := New(db, Config{}).Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: who})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && v.Status == store.Completed:
					won++
				case errors.Is(err, store.ErrConflict): // exit 4
					lost++
				default:
					t.Errorf("round %d: %s: %v %v", round, who, v, err)
				}
			}()
		}
		wg.Wait()
		if won != 1 || lost != 2 {
			t.Fatalf("round %d: %d won, %d lost; want 1 and 2", round, won, lost)
		}
		d, err := New(db, Config{}).Detail(ctx, v.RunID)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[store.Action]int{}
		for _, dv := range d.Decisions {
			counts[dv.Action]++
		}
		if got := fmt.Sprint(counts); got != "map[approve:2 refused:2]" {
			t.Errorf("round %d: decisions %s", round, got)
		}
		if d.Output != "dropped orders" {
			t.Errorf("round %d: output %q", round, d.Output)
		}
	}
}

const autoResumeSpec = `
version: 1
policy: {delegates: [bot]}
models:
  m:
    provider: scripted
    turns:
      - toolCalls: [{tool: deploy, args: {v: "2"}}]
      - toolCalls: [{tool: agentctl_resume, args: {ticket: CHG-1}}]
      - text: "${{ results[0] }}"
tools:
  deploy:
    input: {type: object, properties: {v: {type: string}}}
    output: "deployed under ${{ resume.ticket }}"
    suspend:
      when: ${{ resume == nil }}
      payload: {q: ticket}
    resumeSchema: {type: object, properties: {ticket: {type: string}}, required: [ticket]}
    approvers: [alice]
    separateDuties: true
agents:
  rel: {model: m, tools: [deploy], autoResume: true}
`

// A message that would resume a call through autoResume is a resume: the
// approver policy applies to it as to agentctl resume, --as included, and
// a refusal is recorded and changes nothing else.
func TestSendPolicy(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	g := compile(t, autoResumeSpec)
	e := New(db, Config{})
	v, err := e.Start(ctx, g, StartOptions{Agent: "rel", Input: "ship", StartedBy: "alice"})
	if err != nil || v.Status != store.Suspended {
		t.Fatalf("start: %v %v", v, err)
	}
	for _, m := range []Message{
		{Text: "ticket CHG-1", OSUser: "mallory"},              // not an approver
		{Text: "ticket CHG-1", OSUser: "mallory", By: "alice"}, // not a delegate
		{Text: "ticket CHG-1", OSUser: "alice"},                // started the run (separateDuties)
		{Text: "ticket CHG-1", OSUser: "bot", By: "alice"},     // a delegate, for the starter
	} {
		m.RunID = v.RunID
		if _, err := e.Send(ctx, m); !errors.Is(err, store.ErrForbidden) {
			t.Errorf("send by %s as %q: %v, want ErrForbidden", m.OSUser, m.By, err)
		}
	}
	d, err := e.Detail(ctx, v.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != store.Suspended || len(d.Decisions) != 4 || d.Usage.ModelCalls != 1 {
		t.Fatalf("after refused messages: status %s, %d decisions, %d model calls", d.Status, len(d.Decisions), d.Usage.ModelCalls)
	}
	for _, x := range d.Decisions {
		if x.Action != store.Refused {
			t.Errorf("decision %+v, want refused", x)
		}
	}
}

// The agent's approvers and separateDuties hold for a tool that sets
// neither, and --as is for delegates only: checked without root, by name.
func TestAgentPolicy(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	g := compile(t, `
version: 1
policy: {delegates: [bot]}
models:
  m:
    provider: scripted
    turns:
      - toolCalls: [{tool: restart}]
      - text: done
tools:
  restart: {output: restarted, requireApproval: true}
agents:
  ops: {model: m, tools: [restart], approvers: [alice, carol], separateDuties: true}
`)
	e := New(db, Config{})
	v, err := e.Start(ctx, g, StartOptions{Agent: "ops", Input: "x", StartedBy: "alice"})
	if err != nil || v.Status != store.Suspended {
		t.Fatalf("start: %v %v", v, err)
	}
	for _, d := range []Decision{
		{OSUser: "bob"},                  // not among the agent's approvers
		{OSUser: "alice"},                // started the run (the agent's separateDuties)
		{OSUser: "mallory", By: "carol"}, // not a delegate
		{OSUser: "bot", By: "alice"},     // a delegate, but for the starter
	} {
		d.RunID, d.Action = v.RunID, store.Approve
		if _, err := e.Decide(ctx, d); !errors.Is(err, store.ErrForbidden) {
			t.Errorf("approve by %s as %q: %v, want ErrForbidden", d.OSUser, d.By, err)
		}
	}
	// A delegate approves for an approver who did not start the run.
	if v, err = e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "bot", By: "carol"}); err != nil || v.Status != store.Completed {
		t.Fatalf("approve by bot as carol: %v %v", v, err)
	}
}

// One principal never supplies two approvals of one call, whichever
// people it names with --as, nor approves a run it started under
// separateDuties on someone else's behalf; a person approved for by a
// delegate cannot approve again in person.
func TestOnePrincipal(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	g := compile(t, strings.Replace(fourEyesSpec, "version: 1\n", "version: 1\npolicy: {delegates: [bot, ann]}\n", 1))
	e := New(db, Config{})
	start := func() *RunView {
		v, err := e.Start(ctx, g, StartOptions{Agent: "dba", Input: "x", StartedBy: "ann"})
		if err != nil || v.Status != store.Suspended {
			t.Fatalf("start: %v %v", v, err)
		}
		return v
	}
	approve := func(v *RunView, osUser, as string) (*RunView, error) {
		return e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: osUser, By: as})
	}
	v := start()
	if _, err := approve(v, "bot", "ben"); err != nil {
		t.Fatal(err)
	}
	for _, who := range [][2]string{{"bot", "cat"}, {"ben", "ben"}, {"cat", "bot"}} {
		if _, err := approve(v, who[0], who[1]); !errors.Is(err, store.ErrForbidden) {
			t.Errorf("second approval by %s as %s: %v, want ErrForbidden", who[0], who[1], err)
		}
	}
	// The starter, a delegate, acting for another approver.
	if _, err := approve(start(), "ann", "cat"); !errors.Is(err, store.ErrForbidden) {
		t.Errorf("the starter approving as cat: %v, want ErrForbidden", err)
	}
	if v, err := approve(v, "cat", "cat"); err != nil || v.Status != store.Completed {
		t.Errorf("a second person: %v %v", v, err)
	}
}

// Four-eyes cannot be shortened: --always would let later calls of the
// tool run on one approval, and --args would run arguments only the last
// approver saw. Both are refused on a call that needs several approvals.
func TestFourEyesNoShortcuts(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	g := compile(t, fourEyesSpec)
	e := New(db, Config{})
	v, err := e.Start(ctx, g, StartOptions{Agent: "dba", Input: "x", StartedBy: "zed"})
	if err != nil || v.Status != store.Suspended {
		t.Fatalf("start: %v %v", v, err)
	}
	if _, err := e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "ann", Always: true}); !errors.Is(err, store.ErrForbidden) {
		t.Errorf("approve --always on a four-eyes call: %v, want ErrForbidden", err)
	}
	if _, err := e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "ann"}); err != nil {
		t.Fatal(err)
	}
	_, err = e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "ben", Args: []byte(`{"db":"everything"}`)})
	if !errors.Is(err, store.ErrForbidden) {
		t.Errorf("approve --args on a four-eyes call: %v, want ErrForbidden", err)
	}
	v, err = e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "ben"})
	if err != nil || v.Status != store.Completed || v.Output != "dropped orders" {
		t.Errorf("the second approval, as approved: %v %v", v, err)
	}
}
