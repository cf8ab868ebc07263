package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mark3labs/mcp-go/server"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentctl/agentctl/engine/model/modeltest"
	"github.com/agentctl/agentctl/engine/store/postgres/pgtest"
	"github.com/agentctl/agentctl/internal/scenario"
	"github.com/agentctl/agentctl/toolkits/mcp/demoserver"
)

func TestMain(m *testing.M) {
	testscript.Main(prebuilt{m}, map[string]func(){
		"agentctl": func() { os.Exit(Main()) },
		// apireq is one HTTP request to agentctl serve (serve_test.go).
		"apireq": func() { helperExit(apireqMain()) },
		// webhook-receiver is a Standard Webhooks receiver that logs
		// what it gets (receiver_test.go).
		"webhook-receiver": func() { os.Exit(receiverMain()) },
		// bench-child is a benchmark's worker process (perf_test.go).
		"bench-child": func() { os.Exit(benchChild()) },
		// mcp-demo-server is the demo MCP server (stdio).
		"mcp-demo-server": func() {
			if err := demoserver.Serve(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		},
		// appendline FILE [--] TEXT appends a line to FILE: exec tools
		// in scenarios use it to leave a countable trace of each
		// execution. It prints "appended TEXT". A spec puts -- before a
		// placeholder that begins TEXT, as validate requires.
		"appendline": func() { helperExit(appendline(os.Args[1:])) },
	})
}

// helperExit ends a helper program of this test binary that runs no
// code under test (appendline; apireq, which only makes a request).
// Built with the race detector, a process that exits 0 first sleeps a
// second to catch races at exit (ThreadSanitizer's atexit_sleep_ms),
// unless $GORACE says otherwise; exec tools and other users' processes
// do not get $GORACE, so these exit at once. The helpers that run the
// project's code (mcp-demo-server, webhook-receiver, bench-child) exit
// through os.Exit, where a race turns exit 0 into 66.
func helperExit(code int) {
	if code == 0 {
		syscall.Exit(0) // os.Stdout and os.Stderr are unbuffered
	}
	os.Exit(code)
}

func appendline(args []string) int {
	if len(args) == 3 && args[1] == "--" {
		args = []string{args[0], args[2]}
	}
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: appendline FILE [--] TEXT")
		return 2
	}
	f, err := os.OpenFile(args[0], os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = fmt.Fprintln(f, args[1])
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("appended %s\n", args[1])
	return 0
}

// prebuilt runs the tests with $AGENTCTL_TEST_BIN, when set, as the
// agentctl on PATH: an agentctl built once, without the race detector,
// for the scenarios and the tests that start agentctl processes (make
// test sets it; make race leaves it unset, and they run this test
// binary, race detector and all). The other commands on PATH stay this
// binary's.
type prebuilt struct{ m *testing.M }

func (p prebuilt) Run() int {
	// A process built with the race detector sleeps a second before it
	// exits 0, to catch races at exit (ThreadSanitizer's atexit_sleep_ms);
	// the processes tests start are many and short, and races while one
	// exits are not what they test.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	bin := os.Getenv("AGENTCTL_TEST_BIN")
	if bin == "" {
		return p.m.Run()
	}
	if !filepath.IsAbs(bin) {
		fmt.Fprintf(os.Stderr, "AGENTCTL_TEST_BIN=%s: want an absolute path\n", bin)
		return 2
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		fmt.Fprintf(os.Stderr, "AGENTCTL_TEST_BIN=%s: not an executable file (%v)\n", bin, err)
		return 2
	}
	dir, err := os.MkdirTemp("", "agentctl-prebuilt")
	if err == nil {
		defer os.RemoveAll(dir)
		err = os.Symlink(bin, filepath.Join(dir, "agentctl"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return p.m.Run()
}

// TestScripts runs the scenarios in testdata/scripts. Each gets a fresh
// database ($AGENTCTL_DB in its work directory), $EXAMPLES, the
// examples/agents directory, and $FIXTURES, testdata/fixtures (databases
// written by earlier versions). Besides the standard commands, scripts have:
//
//	exits N PROG [ARGS...]  run PROG like exec and require exit code N
//	capture NAME REGEXP     set $NAME to REGEXP's first group in the last stdout
//	jsonlines N             the last stdout is N lines, each a JSON object
//	                        with a string "type" and "runId"
//	mcpserver NAME          serve the demo MCP server over streamable HTTP on
//	                        loopback until the script ends; $NAME is its URL
//	openaiserver [-parallel] [-echo] [-fail STATUS,...] NAME
//	                        serve a fake OpenAI chat completions API on
//	                        loopback, plain or streamed as the request asks
//	                        ($NAME is its base URL, each request body is
//	                        logged to $WORK/NAME.log): it calls the first
//	                        tool offered with {"service":"nginx"} (and
//	                        -parallel {"service":"redis"} too), then answers
//	                        "done: " and the results joined by "; "; -fail
//	                        answers the first requests with these statuses
//	                        (429 with Retry-After: 0); -echo has the model
//	                        echo its API key in every encoding, in its
//	                        text (each word streamed in two halves), its
//	                        call's id and arguments and its reasoning
//	anthropicserver ...     the same on Anthropic's messages API
//	oncallapi NAME CONFIG   serve a stand-in of PagerDuty's and Opsgenie's
//	                        on-call APIs on loopback ($NAME is its URL;
//	                        CONFIG, a JSON oncalltest.Config; requests are
//	                        logged to name.log, credentials never)
//	pgserver [-own] NAME    set $NAME to the URL of a new, empty PostgreSQL
//	                        database on a throwaway server (started once for
//	                        all scenarios; with -own, one for this scenario
//	                        alone); scenarios using it begin with
//	                        [!postgres] skip: the condition holds where the
//	                        server binaries are, or AGENTCTL_REQUIRE_POSTGRES=1.
//	                        Every server's transaction ids are old (see
//	                        pgtest.FirstXID)
//	pgrestart URL           restart the scenario's own server of URL
//	                        (pg_ctl restart -m fast)
//	mkuser NAME [GROUP...]  make sure the OS user NAME exists, in these OS
//	                        groups (root only; scenarios using it begin
//	                        with [!root] skip)
//	mkshared NAME           set $NAME to a new directory every user can
//	                        enter, outside $WORK (whose parents are private),
//	                        removed when the script ends
//	as [-exit N] USER PROG [ARGS...]
//	                        run PROG as the OS user USER (setuid, its
//	                        groups), in $SHARED, a directory every user can
//	                        use; PROG agentctl is a copy of this binary there;
//	                        like exec, or exits N with -exit
//	sqlhold FILE            hold the SQLite database's write lock (BEGIN
//	                        IMMEDIATE) until the script ends
//	sqlopen FILE            keep a connection to the SQLite database open
//	                        until the script ends: what others commit
//	                        stays in its -wal
//	sqlexec FILE|URL SQL    run SQL on the database (SQLite or PostgreSQL)
//	garble FILE OFFSET N    overwrite N bytes of FILE at OFFSET with 0xA5
//	api [-status N] [-socket PATH] [-token T] [-H 'K: V']... [-events N] [-include] METHOD URL [BODY|@FILE]
//	                        one HTTP request to agentctl serve; its body on
//	                        stdout, "status N" on stderr; fails unless the
//	                        status is N (default: any 2xx), and whatever
//	                        the status when the response is not what the
//	                        OpenAPI document says
//	apireq ...              the same as a program, to run as another user
//	                        (as USER apireq ...) or in the background
//	waitready FILE NAME     wait for serve --ready-file FILE, and set $NAME to
//	                        the base URL in it
//	httpserver NAME         serve HTTP on loopback until the script ends, set
//	                        $NAME to its base URL, and log each request
//	                        (method, path, query, headers, body) to
//	                        $WORK/NAME.log; see testServer for its routes;
//	                        -unix serves on the socket $WORK/NAME.sock and
//	                        sets $NAME to unix:PATH
func TestScripts(t *testing.T) {
	t.Parallel() // with the scenarios: each works in a directory of its own
	t.Cleanup(stopPG)
	examples, err := filepath.Abs("../../examples/agents")
	if err != nil {
		t.Fatal(err)
	}
	fixtures, err := filepath.Abs("../../testdata/fixtures")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "../../testdata/scripts",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("EXAMPLES", examples)
			env.Setenv("FIXTURES", fixtures)
			env.Setenv("GORACE", os.Getenv("GORACE")) // see prebuilt
			return scenario.Setup(env)
		},
		Cmds: testCmds(),
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "postgres":
				return pgtest.Available() || pgtest.Required(), nil
			case "root":
				return os.Geteuid() == 0, nil
			case "tmpfs": // a disk a scenario can fill (smalldisk)
				return canMount(), nil
			case "unshare": // a new PID namespace: root, and a kernel that allows it
				return exec.Command("unshare", "-p", "-f", "--mount-proc", "true").Run() == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// testCmds are scriptCmds plus the servers the project's own scenarios
// start.
func testCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	cmds := scenario.Commands()
	cmds["api"] = apireqCmd
	cmds["jsonget"] = jsonget
	cmds["httpserver"] = httpserver
	cmds["mcpserver"] = mcpserver
	cmds["openaiserver"] = modelserver(modeltest.OpenAI)
	cmds["anthropicserver"] = modelserver(modeltest.Anthropic)
	cmds["pgserver"] = pgserver
	cmds["pgrestart"] = pgrestart
	cmds["pgproxy"] = pgproxy
	cmds["smalldisk"] = smalldisk
	cmds["filldisk"] = filldisk
	cmds["pgcut"] = pgcut
	cmds["mkuser"] = mkuser
	cmds["as"] = asUser
	cmds["mkshared"] = mkshared
	cmds["sqlhold"] = sqlhold
	cmds["sqlopen"] = sqlopen
	cmds["sqlexec"] = sqlexec
	cmds["chainforge"] = chainforge // chainforge_test.go
	cmds["garble"] = garble
	cmds["pidgone"] = pidgone
	cmds["waitready"] = waitready
	cmds["waitfor"] = waitfor
	cmds["slackapi"] = slackapi
	cmds["slackpress"] = slackpress
	cmds["oncallapi"] = oncallapi
	cmds["otlpreceiver"] = otlpreceiver
	addPTY(cmds)
	return cmds
}

// httpserver starts testServer for a script; with -unix, on the Unix
// socket $WORK/NAME.sock, and $NAME is unix:PATH.
func httpserver(ts *testscript.TestScript, neg bool, args []string) {
	unix := len(args) == 2 && args[0] == "-unix"
	if unix {
		args = args[1:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: httpserver [-unix] NAME")
	}
	name := args[0]
	logPath := ts.MkAbs(name + ".log")
	if !unix {
		srv := httptest.NewServer(testServer(logPath))
		ts.Defer(srv.Close)
		ts.Setenv(name, srv.URL)
		return
	}
	sock := ts.MkAbs(name + ".sock")
	l, err := net.Listen("unix", sock)
	ts.Check(err)
	srv := httptest.NewUnstartedServer(testServer(logPath))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	ts.Defer(srv.Close)
	ts.Setenv(name, "unix:"+sock)
}

// testServer answers: /items/ID with JSON naming the item, /tickets (POST)
// with 201 and the JSON it got, /missing with 404, /redirect with a
// redirect to another host, anything else with plain text. It logs every
// request to logPath, one line each.
func testServer(logPath string) http.Handler {
	var mu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%s %s query=%s auth=%q idem=%q body=%s\n", r.Method, r.URL.EscapedPath(), r.URL.RawQuery,
				r.Header.Get("Authorization"), r.Header.Get("Idempotency-Key"), body)
			f.Close()
		}
		mu.Unlock()
		switch {
		case strings.HasPrefix(r.URL.Path, "/items/"):
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"id": strings.TrimPrefix(r.URL.Path, "/items/"), "state": "open"})
		case r.URL.Path == "/tickets" && r.Method == http.MethodPost:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			w.Write(body)
		case r.URL.Path == "/missing":
			http.Error(w, "no such thing", http.StatusNotFound)
		case r.URL.Path == "/redirect":
			http.Redirect(w, r, "http://evil.invalid/steal", http.StatusFound)
		default:
			fmt.Fprintf(w, "hello from %s", r.URL.Path)
		}
	})
}

// mcpserver serves the demo MCP server over streamable HTTP for a script.
func mcpserver(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mcpserver NAME")
	}
	srv := httptest.NewServer(server.NewStreamableHTTPServer(demoserver.New()))
	ts.Defer(srv.Close)
	ts.Setenv(args[0], srv.URL+"/mcp")
}

// modelserver returns a script command that serves a fake provider API
// (see package modeltest) on loopback until the script ends.
func modelserver(start func(modeltest.Options) *modeltest.Server) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		fs := flag.NewFlagSet("modelserver", flag.ContinueOnError)
		parallel := fs.Bool("parallel", false, "")
		echo := fs.Bool("echo", false, "")
		fail := fs.String("fail", "", "")
		if neg || fs.Parse(args) != nil || fs.NArg() != 1 {
			ts.Fatalf("usage: openaiserver|anthropicserver [-parallel] [-echo] [-fail STATUS,...] NAME")
		}
		name := fs.Arg(0)
		o := modeltest.Options{Parallel: *parallel, Echo: *echo, Log: ts.MkAbs(name + ".log")}
		for _, f := range strings.FieldsFunc(*fail, func(r rune) bool { return r == ',' }) {
			n, err := strconv.Atoi(f)
			ts.Check(err)
			o.Fail = append(o.Fail, n)
		}
		srv := start(o)
		ts.Defer(srv.Close)
		ts.Setenv(name, srv.URL)
	}
}

// sqlhold holds a database's write lock, as another process's long
// transaction would, until the script ends.
func sqlhold(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sqlhold FILE")
	}
	db, err := sql.Open("sqlite", ts.MkAbs(args[0]))
	ts.Check(err)
	conn, err := db.Conn(context.Background())
	ts.Check(err)
	_, err = conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
	ts.Check(err)
	ts.Defer(func() {
		conn.ExecContext(context.Background(), "ROLLBACK")
		conn.Close()
		db.Close()
	})
}

// sqlopen keeps a connection to a database open, reading nothing, until
// the script ends: as another process that has it open would, it keeps
// what others commit in the -wal (the last to close a database
// checkpoints it and removes the -wal and -shm).
func sqlopen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sqlopen FILE")
	}
	db, err := sql.Open("sqlite", "file:"+ts.MkAbs(args[0])+"?_pragma=journal_mode(wal)")
	ts.Check(err)
	conn, err := db.Conn(context.Background())
	ts.Check(err)
	var n int
	ts.Check(conn.QueryRowContext(context.Background(), "SELECT count(*) FROM sqlite_schema").Scan(&n))
	ts.Defer(func() {
		conn.Close()
		db.Close()
	})
}

// sqlexec runs SQL on a database; negated, the SQL must fail, and its
// error is the command's standard error.
func sqlexec(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: [!] sqlexec FILE|URL SQL")
	}
	db, _ := scriptDB(ts, args[0]) // chainforge_test.go
	defer db.Close()
	_, err := db.Exec(args[1])
	switch {
	case neg && err == nil:
		ts.Fatalf("sqlexec: the statement succeeded")
	case neg:
		ts.Logf("sqlexec: %v", err)
		fmt.Fprintln(ts.Stderr(), err)
	default:
		ts.Check(err)
	}
}

// garble damages a file in place.
func garble(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: garble FILE OFFSET N")
	}
	off, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	n, err := strconv.Atoi(args[2])
	ts.Check(err)
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_WRONLY, 0)
	ts.Check(err)
	defer f.Close()
	_, err = f.WriteAt(bytes.Repeat([]byte{0xA5}, n), off)
	ts.Check(err)
}

// mkuser makes sure an OS user exists, in the given groups.
func mkuser(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: mkuser NAME [GROUP...]")
	}
	name, groups := args[0], args[1:]
	for _, g := range groups {
		if out, err := exec.Command("groupadd", "-f", g).CombinedOutput(); err != nil {
			ts.Fatalf("groupadd %s: %v\n%s", g, err, out)
		}
	}
	if _, err := user.Lookup(name); err != nil {
		if out, err := exec.Command("useradd", "-M", "-N", "-s", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
			ts.Fatalf("useradd %s: %v\n%s", name, err, out)
		}
	}
	if len(groups) > 0 {
		if out, err := exec.Command("usermod", "-a", "-G", strings.Join(groups, ","), name).CombinedOutput(); err != nil {
			ts.Fatalf("usermod %s: %v\n%s", name, err, out)
		}
	}
}

// asUser runs a program as another OS user.
func asUser(ts *testscript.TestScript, neg bool, args []string) {
	want := 0
	if len(args) > 2 && args[0] == "-exit" {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		want, args = n, args[2:]
		if neg {
			ts.Fatalf("! as -exit N: pick one")
		}
	}
	if len(args) < 2 {
		ts.Fatalf("usage: as [-exit N] USER PROG [ARGS...]")
	}
	u, err := user.Lookup(args[0])
	ts.Check(err)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	var groups []uint32
	ids, _ := u.GroupIds()
	for _, id := range ids {
		g, _ := strconv.Atoi(id)
		groups = append(groups, uint32(g))
	}
	shared := ts.Getenv("SHARED")
	if shared == "" {
		ts.Fatalf("as: $SHARED is not set")
	}
	prog := args[1]
	if prog == "agentctl" || prog == "apireq" { // programs of this test binary
		prog = filepath.Join(shared, "bin", prog)
		if _, err := os.Stat(prog); err != nil {
			self, err := os.Executable()
			if args[1] == "agentctl" { // the prebuilt one, when there is one
				self, err = exec.LookPath("agentctl")
				if err == nil {
					self, err = filepath.EvalSymlinks(self)
				}
			}
			ts.Check(err)
			ts.Check(os.MkdirAll(filepath.Dir(prog), 0o755))
			// A hard link, not a copy: a file written here could still be
			// open for writing in a process another scenario forks, and
			// exec would fail with "text file busy".
			if err := os.Link(self, prog); err != nil {
				data, err := os.ReadFile(self)
				ts.Check(err)
				ts.Check(os.WriteFile(prog, data, 0o755))
			}
		}
	}
	cmd := exec.Command(prog, args[2:]...)
	cmd.Args[0] = filepath.Base(args[1]) // agentctl, apireq: the test binary acts as the program its name says
	cmd.Dir = shared
	var env []string
	for _, kv := range []string{"AGENTCTL_DB", "PATH", "TMPDIR", "GORACE"} {
		env = append(env, kv+"="+ts.Getenv(kv))
	}
	cmd.Env = append(env, "HOME="+shared, "USER=root") // USER must not matter
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}}
	// What it prints becomes the script's stdout and stderr.
	cmd.Stdout, cmd.Stderr = ts.Stdout(), ts.Stderr()
	err = cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("as %s: %v", args[0], err)
		}
		code = ee.ExitCode()
	}
	switch {
	case neg && code == 0:
		ts.Fatalf("as %s %s: unexpected success", args[0], args[1])
	case !neg && code != want:
		ts.Fatalf("as %s %s: exit %d, want %d", args[0], args[1], code, want)
	}
}

// mkshared makes a directory other OS users can use.
func mkshared(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mkshared NAME")
	}
	dir, err := os.MkdirTemp("", "agentctl-shared")
	ts.Check(err)
	ts.Check(os.Chmod(dir, 0o755))
	ts.Defer(func() { os.RemoveAll(dir) })
	ts.Setenv(args[0], dir)
}
