// The scenarios' PostgreSQL: a server shared by them, servers of a
// scenario's own it may restart, and proxies that cut connections.

package main

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentctl/agentctl/engine/store/postgres/pgtest"
)

// stopPG stops the shared PostgreSQL server, if one was started. The
// scenarios run in parallel after TestScripts returns: it is called by a
// Cleanup, which waits for them all, failing or not.
func stopPG() {
	pgMu.Lock()
	defer pgMu.Unlock()
	if pgSrv != nil {
		pgSrv.Stop()
		pgSrv = nil
	}
}

// The PostgreSQL server scenarios share, started on first use.
var (
	pgMu  sync.Mutex
	pgSrv *pgtest.Server
)

// pgserver creates a database for a scenario: on the shared server, or
// with -own on a server of the scenario's own, which pgrestart may
// restart.
func pgserver(ts *testscript.TestScript, neg bool, args []string) {
	own := len(args) == 2 && args[0] == "-own"
	if own {
		args = args[1:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: pgserver [-own] NAME")
	}
	if !own {
		dsn, err := newPGDatabase(filepath.Base(ts.Getenv("WORK")))
		if err != nil {
			ts.Fatalf("postgres: %v", err)
		}
		ts.Setenv(args[0], dsn)
		return
	}
	srv, err := pgtest.Start()
	if err != nil {
		ts.Fatalf("postgres: %v", err)
	}
	ts.Defer(srv.Stop)
	dsn, err := srv.NewDB(context.Background(), "own")
	if err != nil {
		ts.Fatalf("postgres: %v", err)
	}
	ownPG.Store(dsn, srv)
	ts.Defer(func() { ownPG.Delete(dsn) })
	ts.Setenv(args[0], dsn)
}

// ownPG holds the scenarios' own servers, by the URL of their database.
var ownPG sync.Map

// pgrestart restarts a scenario's own server (pg_ctl restart -m fast),
// named by the URL pgserver -own gave.
func pgrestart(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: pgrestart URL")
	}
	srv, ok := ownPG.Load(args[0])
	if !ok {
		ts.Fatalf("pgrestart: %s is no database of a server of this scenario's own (pgserver -own)", args[0])
	}
	ts.Check(srv.(*pgtest.Server).Restart())
}

// newPGDatabase creates a database on the shared server, starting it
// first if need be.
func newPGDatabase(name string) (string, error) {
	pgMu.Lock()
	if pgSrv == nil {
		srv, err := pgtest.Start()
		if err != nil {
			pgMu.Unlock()
			return "", err
		}
		pgSrv = srv
	}
	srv := pgSrv
	pgMu.Unlock()
	return srv.NewDB(context.Background(), name)
}

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
// it. pgcut URL block TEXT cuts every connection that sends TEXT, until
// pgcut URL unblock.
func pgcut(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || args[1] == "after" && len(args) != 3 && len(args) != 4 || args[1] == "all" && len(args) != 2 ||
		args[1] == "block" && len(args) != 3 {
		ts.Fatalf("usage: pgcut URL all | after TEXT [MARK] | refuse [then] | accept | block TEXT | unblock")
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
	case "block":
		p.Block(args[2])
	case "unblock":
		p.Block("")
	default:
		ts.Fatalf("pgcut: want all or after, not %q", args[1])
	}
}
