package storetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// texts are strings a model, a tool or a person may hand the store:
// NUL, bytes that are not UTF-8, a surrogate as WTF-8 writes it, the
// noncharacter PostgreSQL's escaping begins with, a megabyte line, and
// random bytes.
func texts(seed uint64) []string {
	rnd := rand.New(rand.NewPCG(seed, seed))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rnd.IntN(256))
	}
	return []string{
		"a\x00b", "\x00", "tail\x00", "\xff\xfe", "ok \xc3 cut", "\xed\xa0\x80 lone surrogate",
		"\uFDD0", "\uFDD0\"quoted\"", "\uFDD0\"a\\x00\"", `"\x00"`, "é \\ \" \n\t",
		strings.Repeat("x", 1<<20) + "\x00", string(random),
	}
}

// testAnyText: every string column the engine writes from what a model,
// a tool or a person said takes any string, NUL and bytes that are not
// UTF-8 included, and gives it back byte for byte, on every backend; so
// does the claim that starts a run's next call.
func testAnyText(e *env) {
	s := e.handle()
	// A worker's claim reads a run's calls its own way (PostgreSQL:
	// as JSON); claimStart compares them with the stored ones.
	const text = "a\x00b\xff\uFDD0"
	done := &store.Call{Tool: "check", Step: 1, Status: store.CallSucceeded, Result: text, GateError: text}
	next := &store.Call{Tool: "restart", Status: store.CallApproved, Approvals: 1, GateError: text,
		Gate: store.Gate{Verdict: store.GateRequired, Reasons: []store.Reason{{Kind: store.ReasonTool}}}}
	workRun(e, s, "01W", done, next)
	if w := claimStart(e, s, plain); w.Calls[0].Result != text || w.Calls[1].GateError != text {
		e.t.Errorf("claimed calls read back as %q, %q", w.Calls[0].Result, w.Calls[1].GateError)
	}
	seed := uint64(time.Now().UnixNano())
	e.t.Logf("random text from seed %d", seed)
	for i, text := range texts(seed) {
		id := fmt.Sprintf("01T%02d", i)
		r := &store.Run{ID: id, Agent: "oncall", Status: store.Running, Input: text, SpecHash: "h1", State: []byte(`{}`)}
		if err := s.CreateRun(e.ctx, r, []byte("spec"), lease); err != nil {
			e.t.Fatalf("text %d: create: %v", i, err)
		}
		r.Step, r.Output, r.Error = 1, text, text
		calls := []*store.Call{
			{ID: "call_1", Seq: 1, Step: 1, Tool: "t", Args: []byte(`{}`), Status: store.CallApproved},
			{ID: "call_2", Seq: 2, Step: 1, Tool: "t", Args: []byte(`{}`), Status: store.CallPending, Kind: store.KindApproval, GateError: text},
		}
		if err := s.Checkpoint(e.ctx, lease, r, calls); err != nil {
			e.t.Fatalf("text %d: checkpoint: %v", i, err)
		}
		if err := s.MoveCall(e.ctx, lease, start(id, "call_1")); err != nil {
			e.t.Fatal(err)
		}
		done := store.Move{RunID: id, CallID: "call_1", From: store.CallExecuting, To: store.CallSucceeded, Result: text}
		if err := s.MoveCall(e.ctx, lease, done); err != nil {
			e.t.Fatalf("text %d: result: %v", i, err)
		}
		d := &store.Decision{RunID: id, CallID: "call_2", Action: store.Decline, By: "alice", Reason: text, Result: text}
		if _, err := s.Decide(e.ctx, []*store.Decision{d}, lease); err != nil {
			e.t.Fatalf("text %d: decide: %v", i, err)
		}
		checkText(e, s, id, text)
	}
}

func checkText(e *env, s store.Store, id, text string) {
	e.t.Helper()
	same := func(what, got string) {
		if got != text {
			e.t.Errorf("run %s: %s read back as %.40q (%d bytes), want %.40q (%d bytes)", id, what, got, len(got), text, len(text))
		}
	}
	r, err := s.Run(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	same("input", r.Input)
	same("output", r.Output)
	same("error", r.Error)
	calls, err := s.Calls(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	same("result", calls[0].Result)
	same("gate error", calls[1].GateError)
	same("decline's result", calls[1].Result)
	ds, err := s.Decisions(e.ctx, id)
	if err != nil || len(ds) != 1 {
		e.t.Fatalf("decisions: %v, %v", ds, err)
	}
	same("reason", ds[0].Reason)
	list, err := s.List(e.ctx, store.Filter{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, lr := range list {
		if lr.ID == id {
			same("listed input", lr.Input)
		}
	}
}
