package storetest

import (
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/engine/store"
)

// testAuditTree: Audit's Agent takes the decisions in the runs below
// the agent's (a supervisor's sub-agents, at any depth), each with its
// path; RootOnly keeps to the agent's own runs; a name is matched
// whole, its _ and % no wildcards.
func testAuditTree(e *env) {
	s := e.handle()
	as, ok := s.(store.AuditStore)
	if !ok {
		e.t.Fatal("the store is not a store.AuditStore")
	}
	newRun(e, s, "01A", lease, store.CallPending)
	below := func(id, agent, call string, path ...string) {
		r := &store.Run{ID: id, Agent: agent, Status: store.Running, SpecHash: "h1", State: []byte("{}"),
			ParentID: "01A", ParentCall: "call_1", RootID: "01A", Path: path}
		must(e, s.CreateRun(e.ctx, r, []byte("spec"), lease))
		r.Step = 1
		c := &store.Call{ID: call, Seq: 1, Step: 1, Tool: "drop", Args: []byte("{}"), Status: store.CallPending, Kind: store.KindApproval}
		must(e, s.Checkpoint(e.ctx, lease, r, []*store.Call{c}))
	}
	below("01B", "db_admin", "call_1/call_1", "oncall", "db_admin")
	below("01C", "pg", "call_1/call_1/call_1", "oncall", "db_admin", "pg")
	newRun(e, s, "01D", lease, store.CallPending) // another tree, of oncall
	for _, d := range []*store.Decision{
		{RunID: "01B", CallID: "call_1/call_1", Action: store.Approve, By: "alice"},
		{RunID: "01C", CallID: "call_1/call_1/call_1", Action: store.Decline, By: "bob", Reason: "no"},
		{RunID: "01D", CallID: "call_1", Action: store.Approve, By: "carol"},
	} {
		if _, err := s.Decide(e.ctx, []*store.Decision{d}, store.Lease{}); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, c := range []struct {
		f    store.AuditFilter
		want string
	}{
		{store.AuditFilter{Agent: "oncall"}, "01B:oncall>db_admin 01C:oncall>db_admin>pg 01D:oncall"},
		{store.AuditFilter{Agent: "db_admin"}, "01B:oncall>db_admin 01C:oncall>db_admin>pg"},
		{store.AuditFilter{Agent: "db_admin", RootOnly: true}, "01B:oncall>db_admin"},
		{store.AuditFilter{Agent: "pg"}, "01C:oncall>db_admin>pg"},
		{store.AuditFilter{Agent: "oncall", RootOnly: true}, "01D:oncall"},
		{store.AuditFilter{Agent: "oncal_"}, ""},
		{store.AuditFilter{Agent: "%"}, ""},
		{store.AuditFilter{Agent: "db"}, ""}, // not db_admin
		{store.AuditFilter{}, "01B:oncall>db_admin 01C:oncall>db_admin>pg 01D:oncall"},
	} {
		ds, err := as.Audit(e.ctx, c.f)
		var got []string
		for _, d := range ds {
			got = append(got, d.RunID+":"+strings.Join(d.Path, ">"))
		}
		if err != nil || strings.Join(got, " ") != c.want {
			e.e("Audit(%s): %q, %v; want %q", fmt.Sprintf("%+v", c.f), got, err, c.want)
		}
	}
}
