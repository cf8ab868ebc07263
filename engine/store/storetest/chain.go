package storetest

import (
	"crypto/ed25519"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/chain"
)

// chainOf returns a handle's store.ChainStore and its database, to
// tamper with behind the store's back.
func chainOf(e *env, s store.Store) (store.ChainStore, *sql.DB) {
	e.t.Helper()
	cs, ok := s.(store.ChainStore)
	db, ok2 := s.(interface{ SQL() *sql.DB })
	if !ok || !ok2 {
		e.t.Fatal("the store is not a store.ChainStore over SQL")
	}
	return cs, db.SQL()
}

// verify verifies the chain and fails on an error.
func verify(e *env, cs store.ChainStore, pub ed25519.PublicKey) *store.ChainReport {
	e.t.Helper()
	rep, err := cs.VerifyChain(e.ctx, pub)
	if err != nil {
		e.t.Fatal(err)
	}
	return rep
}

// chainFixture writes one record of each kind: two decisions (one with a
// reason holding NUL and invalid UTF-8), a refusal, an escalation, an
// outcome and a rule denial; it returns the number of records.
func chainFixture(e *env, s store.Store) int {
	e.t.Helper()
	newRun(e, s, "01A", lease, store.CallPending, store.CallPending)
	fired, err := s.Escalate(e.ctx, &store.Escalation{RunID: "01A", CallID: "call_1", Step: 1, Kind: "remind"})
	if err != nil || !fired {
		e.t.Fatalf("escalate: %v, %v", fired, err)
	}
	for _, d := range []*store.Decision{
		{RunID: "01A", CallID: "call_2", Action: store.Refused, By: "mallory", Reason: "not\x00 an approver"},
		{RunID: "01A", CallID: "call_1", Action: store.Approve, By: "alice", Reason: "ok\x00 \xff\xfe", ArgsBefore: []byte(`{"s":"nginx"}`)},
		{RunID: "01A", CallID: "call_2", Action: store.Decline, By: "bob", Reason: "no"},
	} {
		if _, err := s.Decide(e.ctx, []*store.Decision{d}, store.Lease{}); err != nil {
			e.t.Fatal(err)
		}
	}
	must(e, s.MoveCall(e.ctx, lease, start("01A", "call_1")))
	must(e, s.MoveCall(e.ctx, lease, store.Move{RunID: "01A", CallID: "call_1", From: store.CallExecuting, To: store.CallSucceeded, Result: "ok"}))
	r, err := s.Run(e.ctx, "01A")
	must(e, err)
	r.Step = 2
	denied := &store.Call{ID: "call_3", Seq: 3, Step: 2, Tool: "restart", Args: []byte(`{}`), Status: store.CallDeclined, Result: "denied",
		Gate: store.Gate{Verdict: store.GateDenied, Rule: &store.RuleRecord{Name: "freeze", Effect: "deny", Reason: "change freeze"}}}
	must(e, s.Checkpoint(e.ctx, lease, r, []*store.Call{denied}))
	return 6
}

// testChain: each decision, refusal, escalation and outcome is a record
// of the chain, in order, written with it; the chain verifies; a reason
// holding NUL and invalid UTF-8 is kept exactly.
func testChain(e *env) {
	s := e.handle()
	cs, _ := chainOf(e, s)
	if rep := verify(e, cs, nil); rep.Records != 0 || !rep.Intact() || rep.Unchained != 0 {
		e.t.Fatalf("empty chain: %+v", rep)
	}
	n := chainFixture(e, s)
	rep := verify(e, cs, nil)
	if !rep.Intact() || rep.Records != n || rep.Head.Seq != int64(n) {
		e.t.Fatalf("chain: %+v problem %v mismatch %v", rep, rep.Problem, rep.Mismatch)
	}
	links, err := cs.ChainLinks(e.ctx, 0, 100)
	if err != nil {
		e.t.Fatal(err)
	}
	var kinds []string
	for _, l := range links {
		kinds = append(kinds, l.Kind)
	}
	if got := strings.Join(kinds, " "); got != "escalation decision decision decision outcome rule-denied" {
		e.e("kinds: %s", got)
	}
	if r := string(links[2].Record); !strings.Contains(r, "\"reason\":\"\ufdd0\\\"ok\\\\x00 \\\\xff\\\\xfe\\\"\"") {
		e.e("a reason with NUL and invalid UTF-8: %s", r)
	}
	if r := string(links[1].Record); !strings.Contains(r, `"reason":"not\u0000 an approver"`) {
		e.e("a reason with NUL: %s", r)
	}
	if r := string(links[5].Record); !strings.Contains(r, `"rule":"freeze"`) || !strings.Contains(r, `"reason":"change freeze"`) {
		e.e("a rule denial: %s", r)
	}
	h, ok, err := cs.ChainHead(e.ctx)
	if err != nil || !ok || h.Seq != int64(n) || h.Hash != rep.Head.Hash {
		e.e("head: %+v %v %v", h, ok, err)
	}
}

// testChainTamper: changes made by SQL behind the store's back, each on
// a fresh chain, and what verification says of them.
func testChainTamper(e *env) {
	for _, c := range []struct {
		name    string
		sql     []string
		problem string // in Problem, Mismatch or Checkpoint
	}{
		{"delete a record", []string{`DELETE FROM audit_chain WHERE seq = 3`}, "record 4: record 3 is missing (deleted)"},
		{"edit a record's reason", []string{`UPDATE audit_chain SET record = replace(record, '"no"', '"yes"') WHERE seq = 4`},
			"record 4: its content does not match its digest"},
		{"reorder two records", []string{`UPDATE audit_chain SET seq = -seq WHERE seq IN (2, 3)`,
			`UPDATE audit_chain SET seq = CASE seq WHEN -2 THEN 3 ELSE 2 END WHERE seq < 0`},
			"record 2: its previous hash"},
		{"edit a decision's reason in its table", []string{`UPDATE decisions SET reason = 'approved by the CAB' WHERE action = 'decline'`},
			"decisions table differs from its chained record in reason: it was edited"},
		{"delete a decision from its table", []string{`DELETE FROM decisions WHERE action = 'refused'`},
			"is gone from the decisions table, but its run was not pruned"},
		{"add a decision behind agentctl's back", []string{`INSERT INTO decisions(run_id, call_id, action, by_name, os_user, via, reason, at)
			SELECT run_id, call_id, 'approve', 'eve', 'eve', '', 'forged', at FROM decisions WHERE action = 'decline'`},
			"is in the decisions table but not in the chain"},
		{"empty a record as if pruned, its decision deleted", []string{`UPDATE audit_chain SET record = NULL, pruned_at = 1 WHERE kind = 'decision' AND seq = (SELECT min(seq) FROM audit_chain WHERE kind = 'decision')`,
			`DELETE FROM decisions WHERE id = (SELECT min(id) FROM decisions)`},
			"is marked pruned, but its run"},
	} {
		s := e.backend(e.t, e.clock.now)() // a database of its own
		defer s.Close()
		cs, db := chainOf(e, s)
		chainFixture(e, s)
		for _, q := range c.sql {
			if _, err := db.ExecContext(e.ctx, q); err != nil {
				e.t.Fatalf("%s: %v", c.name, err)
			}
		}
		rep := verify(e, cs, nil)
		var got []string
		for _, p := range []*chain.Problem{rep.Problem, rep.Mismatch, rep.Checkpoint} {
			if p != nil {
				got = append(got, p.Error())
			}
		}
		if rep.Intact() || !strings.Contains(strings.Join(got, "; "), c.problem) {
			e.e("%s: %q, want %q", c.name, got, c.problem)
		}
	}
}

// testChainRace: processes deciding at once on different runs never fork
// the chain: each decision is one record, and the chain verifies.
func testChainRace(e *env) {
	const n = 8
	s := e.handle()
	for i := range n {
		newRun(e, s, fmt.Sprintf("01R%d", i), lease, store.CallPending)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := e.handle()
			_, errs[i] = h.Decide(e.ctx, []*store.Decision{{RunID: fmt.Sprintf("01R%d", i), CallID: "call_1", Action: store.Decline, By: "bob"}}, store.Lease{})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		must(e, err)
	}
	cs, _ := chainOf(e, s)
	if rep := verify(e, cs, nil); !rep.Intact() || rep.Records != n {
		e.t.Fatalf("after %d racing decisions: %d records, problem %v, mismatch %v", n, rep.Records, rep.Problem, rep.Mismatch)
	}
}

// testChainPrune: a pruned run's records keep their digests and hashes
// (tombstones): the chain verifies and says what range was pruned, when.
func testChainPrune(e *env) {
	s, p := pruner(e)
	cs, _ := chainOf(e, s)
	endedRun(e, s, "01A", "", "h1", store.Completed)
	endedRun(e, s, "01B", "", "h1", store.Completed)
	e.clock.add(pruneAge)
	endedRun(e, s, "01L", "", "h1", store.Completed)
	before := verify(e, cs, nil)
	if _, err := p.Prune(e.ctx, store.PruneOptions{Before: e.cutoff()}); err != nil {
		e.t.Fatal(err)
	}
	rep := verify(e, cs, nil)
	if !rep.Intact() || rep.Records != before.Records || len(rep.Pruned) != 1 {
		e.t.Fatalf("after prune: %+v, problem %v mismatch %v", rep, rep.Problem, rep.Mismatch)
	}
	if r := rep.Pruned[0]; r.From != 1 || r.To != int64(before.Records/3*2) || r.At != e.clock.now().UnixMilli() {
		e.e("pruned range: %+v of %d records", r, before.Records)
	}
	links, _ := cs.ChainLinks(e.ctx, 0, 1)
	if len(links) != 1 || links[0].Record != nil || links[0].Digest == "" {
		e.e("a pruned record: %+v", links)
	}
}

// testChainCheckpoints: a signed head stored in the database exposes a
// rewrite of the whole chain, and one removing its last records.
func testChainCheckpoints(e *env) {
	s := e.handle()
	cs, db := chainOf(e, s)
	chainFixture(e, s)
	priv, pubPEM, err := chain.GenerateKey()
	must(e, err)
	key, _ := chain.ParsePrivateKey(priv)
	pub, _ := chain.ParsePublicKey(pubPEM)
	h, _, err := cs.ChainHead(e.ctx)
	must(e, err)
	h.At = e.clock.now().UnixMilli()
	must(e, cs.SaveCheckpoint(e.ctx, chain.Sign(key, h), "test"))
	must(e, cs.SaveCheckpoint(e.ctx, chain.Sign(key, h), "test")) // once per head and key
	if rep := verify(e, cs, pub); !rep.Intact() || rep.Checkpoints != 1 {
		e.t.Fatalf("checkpoint: %+v %v", rep, rep.Checkpoint)
	}
	// The last record removed: the chain alone is consistent.
	if _, err := db.ExecContext(e.ctx, `DELETE FROM audit_chain WHERE seq = 6`); err != nil {
		e.t.Fatal(err)
	}
	rep := verify(e, cs, pub)
	if rep.Problem != nil || rep.Checkpoint == nil || !strings.Contains(rep.Checkpoint.Why, "records were removed from its end") {
		e.e("tail cut: problem %v, checkpoint %v", rep.Problem, rep.Checkpoint)
	}
	// A forged signature.
	if _, err := db.ExecContext(e.ctx, `UPDATE audit_checkpoints SET signature = 'AAAA'`); err != nil {
		e.t.Fatal(err)
	}
	if rep := verify(e, cs, pub); rep.Checkpoint == nil || !strings.Contains(rep.Checkpoint.Why, "signature does not verify") {
		e.e("forged signature: %v", rep.Checkpoint)
	}
}
