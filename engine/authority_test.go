package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
)

const authoritySpec = `
version: 1
models:
  m:
    provider: scripted
    turns:
      - toolCalls: [{tool: open, args: {}}]
      - toolCalls: [{tool: guarded, args: {}}]
      - text: "done"
tools:
  open:
    input: {type: object}
    output: "opened"
    requireApproval: true
  guarded:
    input: {type: object}
    output: "guarded"
    requireApproval: true
    approvers: [group:ops]
agents:
  a: {model: m, tools: [open, guarded]}
`

// The policy as a server applies it: a spec that names no approvers
// leaves the call to the server's approvers role (empty: nobody); a
// principal's groups are its own, never the OS's; the delegate flag
// allows deciding as another; each decision records how the decider was
// identified.
func TestAuthority(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	g := compile(t, authoritySpec)
	osGroups := func(string) ([]string, error) { return []string{"ops"}, nil } // what the OS would say
	e := New(db, Config{Groups: osGroups})
	v, err := e.Start(ctx, g, StartOptions{Agent: "a", Input: "x", StartedBy: "starter"})
	if err != nil || v.Status != store.Suspended {
		t.Fatalf("start: %v %v", v, err)
	}
	approve := func(by, as string, auth *Authority) error {
		_, err := e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: by, By: as, Auth: auth})
		return err
	}
	// An empty approvers role: nobody may decide the unguarded call.
	err = approve("ann", "", &Authority{Via: "token"})
	if !errors.Is(err, store.ErrForbidden) || !strings.Contains(err.Error(), "approvers role is empty") {
		t.Fatalf("empty role: %v", err)
	}
	// Not in the role.
	role := spec.Approvers{Users: []string{"ben"}, Groups: []string{"sre"}}
	if err := approve("ann", "", &Authority{Approvers: role, Via: "token"}); !errors.Is(err, store.ErrForbidden) {
		t.Fatalf("not in the role: %v", err)
	}
	// As another, without the delegate flag.
	err = approve("bot", "ben", &Authority{Approvers: role, Via: "token"})
	if !errors.Is(err, store.ErrForbidden) || !strings.Contains(err.Error(), "may not decide on behalf of ben") {
		t.Fatalf("as without delegate: %v", err)
	}
	// A delegate decides as ben, an approver by the role.
	if err := approve("bot", "ben", &Authority{Approvers: role, Delegate: true, Via: "token"}); err != nil {
		t.Fatalf("delegate: %v", err)
	}
	// The guarded call: cat's token has no groups; the OS's ops group of
	// a same-named account does not count.
	err = approve("cat", "", &Authority{Approvers: role, Via: "token"})
	if !errors.Is(err, store.ErrForbidden) || !strings.Contains(err.Error(), "cat is not an approver (approvers: group:ops)") {
		t.Fatalf("token without groups: %v", err)
	}
	// The spec's approvers govern: the role's sre does not, ops does.
	if err := approve("dan", "", &Authority{Groups: []string{"sre"}, Approvers: role, Via: "socket"}); !errors.Is(err, store.ErrForbidden) {
		t.Fatalf("role group on a guarded call: %v", err)
	}
	recorded := false
	_, err = e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "dan",
		Auth: &Authority{Groups: []string{"ops"}, Via: "socket"}, Recorded: func() { recorded = true }})
	if err != nil || !recorded {
		t.Fatalf("an ops member: %v (recorded %v)", err, recorded)
	}
	d, err := e.Detail(ctx, v.RunID)
	if err != nil || d.Status != store.Completed {
		t.Fatalf("detail: %v %v", d, err)
	}
	// Who may decide each call, for the inbox.
	calls, err := db.Calls(ctx, v.RunID)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := db.Run(ctx, v.RunID)
	for _, c := range calls {
		a, err := e.Deciders(ctx, r, c)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"open": "", "guarded": "group:ops"}[c.Tool]; a.String() != want {
			t.Errorf("approvers of %s: %q, want %q", c.Tool, a, want)
		}
	}
}

// A name to act on behalf of that could not name a user (a newline, an
// escape sequence, a space) is refused before anything is recorded, in a
// decision and in a message; a message on behalf of another needs a
// delegate, as a decision does.
func TestOnBehalfNames(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	g := compile(t, authoritySpec)
	e := New(db, Config{})
	v, err := e.Start(ctx, g, StartOptions{Agent: "a", Input: "x", StartedBy: "starter"})
	if err != nil || v.Status != store.Suspended {
		t.Fatalf("start: %v %v", v, err)
	}
	for _, by := range []string{"mallory)\n  approve  call_1  by alice", "m\r\x1b[2K", "two words", "group:ops"} {
		_, err := e.Decide(ctx, Decision{RunID: v.RunID, Action: store.Approve, OSUser: "bot", By: by,
			Auth: &Authority{Delegate: true, Approvers: spec.Approvers{Users: []string{by}}}})
		if !errors.Is(err, ErrUsage) {
			t.Errorf("approve as %q: %v, want a usage error", by, err)
		}
		if _, err := e.Send(ctx, Message{RunID: v.RunID, Text: "hi", OSUser: "bot", By: by}); !errors.Is(err, ErrUsage) {
			t.Errorf("send as %q: %v, want a usage error", by, err)
		}
	}
	d, err := e.Detail(ctx, v.RunID)
	if err != nil || len(d.Decisions) != 0 || d.Status != store.Suspended {
		t.Fatalf("after refused names: %v decisions, status %s, %v", len(d.Decisions), d.Status, err)
	}
	// Send on behalf of another, by one who is no delegate: refused.
	done, err := e.Start(ctx, compile(t, "version: 1\nmodels: {m: {provider: scripted, turns: [{text: a}, {text: b}]}}\nagents: {c: {model: m}}\n"),
		StartOptions{Agent: "c", Input: "x"})
	if err != nil || done.Status != store.Completed {
		t.Fatalf("start: %v %v", done, err)
	}
	if _, err := e.Send(ctx, Message{RunID: done.RunID, Text: "hi", OSUser: "ralph", By: "alice"}); !errors.Is(err, store.ErrForbidden) {
		t.Fatalf("send as alice by ralph: %v, want ErrForbidden", err)
	}
	if _, err := e.Send(ctx, Message{RunID: done.RunID, Text: "hi", OSUser: "bot", By: "alice", Auth: &Authority{Delegate: true}}); err != nil {
		t.Fatalf("send as alice by a delegate: %v", err)
	}
}
