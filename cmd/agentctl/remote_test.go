package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/backend"
	"github.com/agentctl/agentctl/server"
	"github.com/agentctl/agentctl/server/sse"
)

// remoteSpec has a tool that needs approval, one that suspends for
// resume data, and one only "nobody-at-all" may approve.
const remoteSpec = `version: 1
models:
  m:
    provider: scripted
    turns:
      - toolCalls: [{tool: restart, args: {service: nginx}}]
      - text: "Done: ${{ results[0] }}"
  d:
    provider: scripted
    turns:
      - toolCalls: [{tool: deploy, args: {env: prod, version: "1.2"}}]
      - text: "${{ results[0] }}"
  p:
    provider: scripted
    turns:
      - toolCalls: [{tool: drop_db, args: {db: orders}}]
      - text: "dropped"
tools:
  restart:
    input: {type: object, properties: {service: {type: string}}}
    output: "restarted ${{ input.service }}"
    requireApproval: true
  deploy:
    input: {type: object, properties: {env: {type: string}, version: {type: string}}}
    suspend:
      when: ${{ resume == nil }}
      payload: {message: "needs a change ticket"}
    resumeSchema:
      type: object
      properties: {ticket: {type: string, pattern: "^CHG-[0-9]+$"}}
      required: [ticket]
    output: "deployed ${{ input.version }} under ${{ resume?.ticket }}"
  drop_db:
    input: {type: object, properties: {db: {type: string}}}
    output: "dropped ${{ input.db }}"
    requireApproval: true
    approvers: [nobody-at-all]
agents:
  oncall: {model: m, tools: [restart]}
  deployer: {model: d, tools: [deploy]}
  dba: {model: p, tools: [drop_db]}
`

// startServer serves the API on a Unix socket over a database of its own,
// with the caller in every role, and waits up to wait for a run to rest
// before it answers 202; it returns the --server value.
func startServer(t *testing.T, dir, specPath, wait string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	db, err := backend.Open(ctx, filepath.Join(dir, "server.db"), backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(db, engine.Config{Models: model.Default()})
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &server.Config{Readers: []string{me.Username}, Runners: []string{me.Username}, Approvers: []string{me.Username},
		Limits: server.LimitsConfig{Wait: wait}, RateLimit: server.RateConfig{PerSecond: 1000, Burst: 1000}}
	specs := server.NewSpecs([]string{specPath}, 1<<20, e.Compile)
	if err := specs.Load(slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	ss, ok := any(db).(store.ServerStore)
	if !ok {
		t.Fatal("the SQLite store does not serve")
	}
	// Events: the store's feed, looked at every 20ms (SQLite has no
	// notifications), a keep-alive after 200ms of silence.
	n := sse.NewNotifier()
	go n.Run(ctx, func(ctx context.Context, d time.Duration) error {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
		return nil
	}, 20*time.Millisecond)
	events := sse.Handler(ss, n.Wait, sse.Options{KeepAlive: 200 * time.Millisecond})
	srv, err := server.New(server.Options{Store: ss, Engine: e, Config: cfg, Specs: specs, Work: ctx, Events: events})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done, pooled := make(chan error, 1), make(chan struct{})
	go func() { done <- srv.Serve(ctx, []net.Listener{ln}, nil, stop, time.Second) }()
	// The server's workers advance queued and detached-decided runs.
	go func() {
		defer close(pooled)
		e.Serve(ctx, engine.PoolOptions{Concurrency: 2, Poll: 20 * time.Millisecond})
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		cancel()
		<-pooled
		cancel()
		e.Close()
		db.Close()
	})
	return "unix:" + sock
}

// cli runs agentctl in this process and returns its stdout, stderr and
// exit code.
func cli(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, stop: make(chan struct{})}
	root := a.rootCmd()
	root.SetArgs(args)
	code := a.report(root.ExecuteContext(context.Background()))
	a.close()
	return out.String(), errb.String(), code
}

var (
	runIDs = regexp.MustCompile(`\b[0-9A-HJKMNP-TV-Z]{10,26}\b`)
	stamps = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	// How long things took differs from run to run: a call's ran line,
	// its durationSeconds, a model turn's latencySeconds, a run's age.
	timings = regexp.MustCompile(`ran: \d+(\.\d+)?(ms|s|m\d+s)|"(durationSeconds|latencySeconds)": ?[0-9.e-]+|TIME +\d+[smhd] `)
	// The hints name the database or the server they go through.
	hintPlace = regexp.MustCompile(`agentctl --(db|server) \S+ `)
)

// normal replaces what differs between two databases: run ids, times and
// the place the hints name.
func normal(s string) string {
	s = hintPlace.ReplaceAllString(s, "agentctl ")
	s = stamps.ReplaceAllString(runIDs.ReplaceAllString(s, "ID"), "TIME")
	return timings.ReplaceAllString(s, "TIMING")
}

// both runs the same command against the database and against the
// server, and requires the same output and exit code; it returns the
// local stdout.
func both(t *testing.T, env *remoteEnv, args ...string) string {
	t.Helper()
	subst := func(ids map[string]string) []string {
		var out []string
		for _, a := range args {
			if id, ok := ids[a]; ok {
				a = id
			}
			if a != drop {
				out = append(out, a)
			}
		}
		return out
	}
	lo, le, lc := cli(t, append([]string{"--db", env.db}, subst(env.local)...)...)
	ro, re, rc := cli(t, append([]string{"--server", env.server}, subst(env.remote)...)...)
	if lc != rc || normal(lo) != normal(ro) {
		t.Fatalf("%q:\nlocal (exit %d):\n%s%s\nserver (exit %d):\n%s%s", args, lc, lo, le, rc, ro, re)
	}
	if !env.loose && normal(le) != normal(re) {
		t.Fatalf("%q: stderr local %q, server %q", args, le, re)
	}
	if (le == "") != (re == "") {
		t.Fatalf("%q: stderr local %q, server %q", args, le, re)
	}
	return lo
}

// drop, as the substitute of an argument, leaves it out.
const drop = "\x00"

// remoteEnv is a database and a server, and the ids of the runs each
// started under a name.
type remoteEnv struct {
	db, server    string
	local, remote map[string]string
	// loose: the server words an error its own way (stderr not compared)
	loose bool
}

// start starts the same run on both, named name.
func (env *remoteEnv) start(t *testing.T, name string, args ...string) {
	t.Helper()
	both(t, env, args...)
	for _, side := range []struct {
		flag, at string
		ids      map[string]string
	}{{"--db", env.db, env.local}, {"--server", env.server, env.remote}} {
		out, _, _ := cli(t, side.flag, side.at, "list", "--limit", "1", "-o", "json")
		var runs []engine.RunView
		if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) != 1 {
			t.Fatalf("list: %v %s", err, out)
		}
		side.ids[name] = runs[0].RunID
	}
}

// The commands print the same text and JSON, and exit with the same
// codes, against a database and through a server: one that answers once
// the run rests, and one that answers 202 at once (the CLI then follows
// the run's events until it rests).
func TestRemoteMatchesLocal(t *testing.T) {
	for _, wait := range []string{"30s", "0s"} {
		t.Run("wait="+wait, func(t *testing.T) { remoteMatchesLocal(t, wait) })
	}
}

func remoteMatchesLocal(t *testing.T, wait string) {
	dir := t.TempDir()
	specPath := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(specPath, []byte(remoteSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &remoteEnv{db: filepath.Join(dir, "local.db"), server: startServer(t, dir, specPath, wait),
		local: map[string]string{}, remote: map[string]string{}}
	// The server runs its own spec; the database takes it with -f.
	env.local["-f"], env.local["SPEC"] = "-f", specPath
	env.remote["-f"], env.remote["SPEC"] = drop, drop

	env.start(t, "R1", "run", "oncall", "-f", "SPEC", "--input", "nginx is down")
	out := both(t, env, "show", "R1")
	if !strings.Contains(out, "pending\n  call_1  restart") {
		t.Fatalf("show:\n%s", out)
	}
	both(t, env, "show", "R1", "-o", "json")
	both(t, env, "show", "R1", "--tree")
	both(t, env, "show", "R1", "--tree", "-o", "json")
	both(t, env, "list")
	both(t, env, "list", "--status", "suspended", "-o", "json")
	if out := both(t, env, "approve", "R1", "--reason", "ticket CHG-1"); !strings.Contains(out, "Done: restarted nginx") {
		t.Fatalf("approve:\n%s", out)
	}
	both(t, env, "show", "R1")
	both(t, env, "events", "R1")
	both(t, env, "events", "R1", "--follow")
	both(t, env, "approve", "R1") // conflict: nothing waits (exit 2 or 4 alike)

	// A follower through the server, started while the run waits, prints
	// what events on the database prints once the run has completed.
	env.start(t, "R3", "run", "oncall", "-f", "SPEC", "--input", "db is down")
	followed := make(chan string)
	go func() {
		out, _, _ := cli(t, "--server", env.server, "events", env.remote["R3"], "--follow")
		followed <- out
	}()
	both(t, env, "approve", "R3")
	remote := <-followed
	local, _, _ := cli(t, "--db", env.db, "events", env.local["R3"])
	if l, r := normal(local), normal(remote); l != r || !strings.Contains(r, `"type":"finish"`) {
		t.Fatalf("events --follow through the server:\n%s\nlocal events:\n%s", r, l)
	}

	env.start(t, "R2", "run", "oncall", "-f", "SPEC", "--input", "redis is down", "-o", "json")
	both(t, env, "decline", "R2", "--reason", "not now", "-o", "json")

	// Detached, through a server: its workers advance the run.
	out, _, code := cli(t, "--server", env.server, "run", "oncall", "--input", "queue it", "--detach")
	if !regexp.MustCompile(`^run [0-9A-Z]{26}  oncall  (queued|running|suspended)\nqueued; the server's workers run it\n$`).MatchString(out) || code != 0 {
		t.Fatalf("run --detach: exit %d\n%s", code, out)
	}
	env.start(t, "R4", "run", "oncall", "-f", "SPEC", "--input", "decide it later")
	out, _, code = cli(t, "--server", env.server, "approve", env.remote["R4"], "--detach", "-o", "json")
	var v engine.RunView
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 || v.RunID != env.remote["R4"] {
		t.Fatalf("approve --detach -o json: exit %d, %v\n%s", code, err, out)
	}
	out, _, code = cli(t, "--server", env.server, "events", env.remote["R4"], "--follow")
	if code != 0 || !strings.Contains(out, `"type":"finish"`) {
		t.Fatalf("events --follow of a detached approval: exit %d\n%s", code, out)
	}

	env.start(t, "D", "run", "deployer", "-f", "SPEC", "--input", "ship 1.2")
	env.loose = true
	both(t, env, "resume", "D", "--data", `{"ticket":"nope"}`) // invalid data: exit 2
	env.loose = false
	both(t, env, "resume", "D", "--data", `{"ticket":"CHG-9"}`)
	both(t, env, "send", "D", "and then?")

	env.start(t, "P", "run", "dba", "-f", "SPEC", "--input", "drop orders")
	both(t, env, "approve", "P") // forbidden: exit 5
	both(t, env, "list", "--agent", "dba", "--limit", "5")
	both(t, env, "show", "01JD3F0000000000000000000A") // unknown: exit 2

	// Under -o json, the server's error object is printed on stderr.
	out, errText, code := cli(t, "--server", env.server, "approve", env.remote["P"], "-o", "json")
	var body api.ErrorBody
	if err := json.Unmarshal([]byte(errText), &body); err != nil || code != exitForbidden || out != "" ||
		body.Error.Code != api.CodeForbidden || !strings.Contains(body.Error.Message, "is not an approver") {
		t.Fatalf("approve -o json: exit %d, stdout %q, stderr %q (%v)", code, out, errText, err)
	}
}
