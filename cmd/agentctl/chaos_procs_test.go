package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store/postgres/pgtest"
)

// chaosSpec: each run calls act once, which waits for approval; act
// appends "RUN CALL PID" to the ledger as it starts, then takes a while,
// so that faults land while it runs.
const chaosSpec = `version: 1
models:
  m:
    provider: scripted
    turns:
      - toolCalls: [{tool: act, args: {}}]
      - text: done
tools:
  act:
    input: {type: object}
    requireApproval: true
    exec:
      shell: true
      command: ['echo "$AGENTCTL_RUN_ID $AGENTCTL_CALL_ID $$" >> %s; sleep 0.4']
agents:
  a: {model: m, tools: [act]}
`

const chaosConfig = `specs: [spec.yaml]
runners: [hana, hugo]
approvers: [hana, hugo]
`

// chaosWorkers is how many agentctl worker processes run besides serve.
const chaosWorkers = 3

// proc is an agentctl process the harness started, and when it ended.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// cluster is PostgreSQL, a proxy in front of it, agentctl serve and the
// workers, all reaching the database through the proxy.
type cluster struct {
	t       *testing.T
	dir     string
	pg      *pgtest.Server
	proxy   *pgtest.Proxy
	direct  string // the database's URL, for the harness's own reads
	dsn     string // through the proxy, for agentctl
	lease   time.Duration
	url     string // serve's base URL
	listen  string // serve's host:port, kept across restarts
	tokens  []string
	ledger  string
	started int // processes started, for log names

	mu      sync.Mutex
	serve   *proc
	workers [chaosWorkers]*proc
}

// newCluster starts everything and stops it when the test ends.
func newCluster(t *testing.T, dir string, lease time.Duration) *cluster {
	pg, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Stop)
	direct, err := pg.NewDB(context.Background(), "chaos")
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := pgtest.NewProxy(direct)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	c := &cluster{t: t, dir: dir, pg: pg, proxy: proxy, direct: direct, dsn: proxy.URL(direct),
		lease: lease, listen: "127.0.0.1:0", ledger: filepath.Join(dir, "ledger")}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("spec.yaml", fmt.Sprintf(chaosSpec, c.ledger))
	write("config.yaml", chaosConfig)
	if _, out, err := c.cli(c.direct, "migrate"); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	for _, u := range []string{"hana", "hugo"} {
		out, errOut, err := c.cli(c.direct, "token", "create", "--user", u)
		if err != nil {
			t.Fatalf("token create: %v\n%s", err, errOut)
		}
		c.tokens = append(c.tokens, strings.TrimSpace(out))
	}
	t.Cleanup(c.stopAll)
	c.startServe()
	for i := range chaosWorkers {
		c.startWorker(i)
	}
	return c
}

// cli runs agentctl on the database db and returns its output.
func (c *cluster) cli(db string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command("agentctl", args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "AGENTCTL_DB="+db)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// spawn starts a long-lived agentctl process, its output in a log file.
func (c *cluster) spawn(name string, args ...string) *proc {
	c.started++
	log, err := os.Create(filepath.Join(c.dir, fmt.Sprintf("%s-%d.log", name, c.started)))
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command("agentctl", args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "AGENTCTL_DB="+c.dsn)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); log.Close(); close(p.done) }()
	return p
}

// startServe starts serve on its address and waits until it is ready.
func (c *cluster) startServe() {
	ready := filepath.Join(c.dir, "ready")
	os.Remove(ready)
	p := c.spawn("serve", "serve", "--config", "config.yaml", "--listen", c.listen, "--ready-file", ready, "--grace", "5s")
	deadline := time.Now().Add(time.Minute)
	for {
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			c.url = strings.TrimSpace(string(b))
			c.listen = strings.TrimPrefix(c.url, "http://")
			break
		}
		select {
		case <-p.done:
			c.t.Fatalf("serve exited before it was ready (see %s)", c.dir)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.t.Fatal("serve not ready after a minute")
		}
	}
	c.mu.Lock()
	c.serve = p
	c.mu.Unlock()
}

func (c *cluster) startWorker(i int) {
	p := c.spawn(fmt.Sprintf("worker%d", i), "worker", "--lease", c.lease.String(), "--poll", "200ms", "--concurrency", "2", "--grace", "5s")
	c.mu.Lock()
	c.workers[i] = p
	c.mu.Unlock()
}

// signal sends sig to p and waits for it to exit (up to a minute).
func (c *cluster) signal(p *proc, sig syscall.Signal) {
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		c.t.Errorf("pid %d still there a minute after %v", p.cmd.Process.Pid, sig)
		p.cmd.Process.Kill()
		<-p.done
	}
}

// stopAll stops serve and the workers gracefully.
func (c *cluster) stopAll() {
	c.mu.Lock()
	ps := append([]*proc{c.serve}, c.workers[:]...)
	c.mu.Unlock()
	for _, p := range ps {
		if p != nil {
			c.signal(p, syscall.SIGTERM)
		}
	}
}

// workerRunning returns the index of a worker whose tool is running
// now, from the ledger's last lines; -1 if none is found within wait.
func (c *cluster) workerRunning(wait time.Duration) int {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		for _, e := range readLedger(c.ledger) {
			if !toolAlive(e.pid, c.ledger) {
				continue
			}
			c.mu.Lock()
			ws := c.workers
			c.mu.Unlock()
			for i, w := range ws {
				if descends(e.pid, w.cmd.Process.Pid) {
					return i
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return -1
}

// descends reports whether process pid descends from ancestor
// (/proc/PID/stat's fourth field is the parent).
func descends(pid, ancestor int) bool {
	for range 10 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		_, rest, _ := bytes.Cut(b, []byte(") "))
		f := strings.Fields(string(rest))
		if len(f) < 2 {
			return false
		}
		pid, _ = strconv.Atoi(f[1])
		if pid == ancestor {
			return true
		}
		if pid <= 1 {
			return false
		}
	}
	return false
}

// toolAlive reports whether pid is still a tool process writing to the
// ledger (its command line names the ledger: not a reused pid).
func toolAlive(pid int, ledger string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && bytes.Contains(b, []byte(ledger))
}

// ledgerEntry is one execution of act.
type ledgerEntry struct {
	run, call string
	pid       int
}

func readLedger(path string) []ledgerEntry {
	b, _ := os.ReadFile(path)
	var es []ledgerEntry
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		pid, _ := strconv.Atoi(f[2])
		es = append(es, ledgerEntry{f[0], f[1], pid})
	}
	return es
}

// newHTTPClient makes one connection per request: serve is killed and
// restarted under it.
func newHTTPClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}

// request sends one request to serve with token tok; status is 0 when
// no answer came.
func (c *cluster) request(hc *http.Client, method, path, tok, key, body string) (int, string) {
	req, err := http.NewRequest(method, c.url+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// procExit is a process's exit code: 0, the code, or -1 when it did not
// run or was killed.
func procExit(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}
