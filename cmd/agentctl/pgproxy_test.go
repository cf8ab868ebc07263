package main

import (
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentctl/agentctl/engine/store/postgres/pgtest"
)

// proxies holds the scenarios' PostgreSQL proxies, by the URL they give.
var proxies sync.Map

// pgproxy puts a proxy that pgcut can cut between a scenario and a
// PostgreSQL database: pgproxy NAME URL sets NAME to the database's URL
// through the proxy.
func pgproxy(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: pgproxy NAME URL")
	}
	p, err := pgtest.NewProxy(args[1])
	ts.Check(err)
	ts.Defer(func() { p.Close() })
	u := p.URL(args[1])
	proxies.Store(u, p)
	ts.Defer(func() { proxies.Delete(u) })
	ts.Setenv(args[0], u)
}

// pgcut cuts the connections of a proxy pgproxy made: pgcut URL all cuts
// every connection under way (a dropped network); pgcut URL after TEXT
// [MARK] cuts the next connection that sends TEXT (having sent MARK
// before, when given), once the server has it and before its answer
// comes back (pgcut URL after commit 'insert into decisions': a
// decision's COMMIT whose outcome the client cannot know). pgcut URL
// refuse makes the proxy refuse new connections, as a server that is
// down does (with then: from the next cut on); pgcut URL accept undoes
// it.
func pgcut(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || args[1] == "after" && len(args) != 3 && len(args) != 4 || args[1] == "all" && len(args) != 2 {
		ts.Fatalf("usage: pgcut URL all | after TEXT [MARK] | refuse [then] | accept")
	}
	v, ok := proxies.Load(args[0])
	if !ok {
		ts.Fatalf("pgcut: %s is not a proxy of this scenario (pgproxy)", args[0])
	}
	p := v.(*pgtest.Proxy)
	switch args[1] {
	case "all":
		ts.Logf("cut %d connections", p.CutAll())
	case "after":
		p.CutAfter(args[2], args[3:]...)
	case "refuse":
		p.Refuse(true, len(args) == 3 && args[2] == "then")
	case "accept":
		p.Refuse(false, false)
	default:
		ts.Fatalf("pgcut: want all or after, not %q", args[1])
	}
}
