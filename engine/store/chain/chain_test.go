package chain

import (
	"bytes"
	"testing"

	"github.com/agentctl/agentctl/internal/jcs"
)

// TestCanonical: the record's canonical JSON, written directly, is what
// RFC 8785 canonicalization of its JSON gives, whatever its strings hold.
func TestCanonical(t *testing.T) {
	for _, r := range []Record{
		{Kind: KindOutcome, RunID: "01A", At: 1},
		{Kind: KindDecision, Decision: 7, RunID: "01A", CallID: "call_1", Action: "approve", By: "alice", OSUser: "root", Via: "socket",
			Reason: "ok <&> \\u2028 \"q\" \\\\ \x00\x1f\t\n é €", ArgsBefore: `{"s":"nginx"}`, ArgsAfter: `{"s":"web"}`, Data: `{}`, At: 1796454350671},
		{Kind: KindEscalation, RunID: "01A", CallID: "c", Step: 2, Action: "remind", At: 5},
		{Kind: KindRuleDenied, RunID: "01A", CallID: "c", Rule: "freeze", Reason: "\\xff\\xfe", Result: Result("x"), Status: "x", At: 9},
		{Kind: KindDecision, RunID: "\\uFDD0x", Reason: "\xff", At: -3},
	} {
		got, err := r.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []*string{&r.RunID, &r.CallID, &r.Action, &r.By, &r.OSUser, &r.Via, &r.Reason,
			&r.ArgsBefore, &r.ArgsAfter, &r.Data, &r.Status, &r.Rule} {
			*s = Text(*s)
		}
		want, err := jcs.Marshal(r)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Canonical\\n = %s\\nwant %s (%v)", got, want, err)
		}
	}
}

// TestVerifier: a chain of links verifies; each kind of damage is named.
func TestVerifier(t *testing.T) {
	var links []Link
	var prev *Link
	for i := range 4 {
		l, err := Next(prev, Record{Kind: KindDecision, RunID: "01A", Reason: string(rune('a' + i)), At: int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		links = append(links, l)
		prev = &links[len(links)-1]
	}
	check := func(name string, ls []Link, want string) {
		t.Helper()
		var v Verifier
		for _, l := range ls {
			v.Add(l)
		}
		got := ""
		if p := v.Report().Problem; p != nil {
			got = p.Error()
		}
		if !bytes.Contains([]byte(got), []byte(want)) || (want == "") != (got == "") {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	check("intact", links, "")
	check("deleted", []Link{links[0], links[2], links[3]}, "record 3: record 2 is missing (deleted)")
	check("reordered", []Link{links[0], links[2], links[1]}, "record 3: record 2 is missing")
	edited := append([]Link(nil), links...)
	edited[1].Record = []byte(`{"at":1,"kind":"decision","reason":"z","run":"01A"}`)
	check("edited", edited, "record 2: its content does not match its digest")
	pruned := append([]Link(nil), links...)
	pruned[1].Record, pruned[1].PrunedAt = nil, 99
	var v Verifier
	for _, l := range pruned {
		v.Add(l)
	}
	if r := v.Report(); r.Problem != nil || len(r.Pruned) != 1 || r.Pruned[0] != (Range{From: 2, To: 2, At: 99}) {
		t.Errorf("pruned: %+v", r)
	}
}
