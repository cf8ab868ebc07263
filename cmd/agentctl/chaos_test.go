package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/postgres/pgtest"
)

// TestChaos is the fault-injection harness (make chaos): PostgreSQL,
// agentctl serve and three workers (lease CHAOS_LEASE, default 3s), all
// through a proxy that can drop their connections. Each round starts
// CHAOS_BATCH runs (over HTTP and with the CLI) whose one tool call waits
// for approval; two or three deciders race on each call, over HTTP and
// with agentctl approve/decline, while one fault is injected (in turn:
// faultKinds). Rounds go on for CHAOS_ROUNDS rounds or CHAOS_DURATION,
// whichever is longer. Then it checks that every approved call ran
// exactly once or is interrupted with its process gone, that no decision
// reported done is missing, that no run stays running or queued, and
// prints figures. It runs only with AGENTCTL_CHAOS or CHAOS_DURATION set.
func TestChaos(t *testing.T) {
	if os.Getenv("AGENTCTL_CHAOS") == "" && os.Getenv("CHAOS_DURATION") == "" {
		t.Skip("set AGENTCTL_CHAOS=1 (or CHAOS_DURATION) to run the chaos harness: make chaos")
	}
	if !pgtest.Available() {
		t.Fatal(pgtest.ErrNoServer)
	}
	cfg := chaosSizeFromEnv(t)
	dir := t.TempDir()
	if keep := os.Getenv("CHAOS_DIR"); keep != "" { // kept after the test, for its logs
		dir = keep
		os.MkdirAll(dir, 0o755)
	}
	c := newCluster(t, dir, cfg.lease)
	h := &harness{c: c, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.seed, 31)), faults: map[string]int{}, recovery: map[string][]time.Duration{}}
	start := time.Now()
	kinds := faultKinds()
	for n := 0; n < cfg.rounds || time.Since(start) < cfg.duration; n++ {
		h.round(kinds[n%len(kinds)])
		if t.Failed() {
			break
		}
	}
	tally := h.check()
	h.report(tally, time.Since(start))
}

// chaosSize sizes the harness.
type chaosSize struct {
	rounds, batch int
	duration      time.Duration
	lease         time.Duration
	deadline      time.Duration // for runs to come to rest after a fault
	seed          uint64
}

func chaosSizeFromEnv(t *testing.T) chaosSize {
	cfg := chaosSize{rounds: envInt("CHAOS_ROUNDS", len(faultKinds())), batch: envInt("CHAOS_BATCH", 6),
		lease: 3 * time.Second, deadline: 90 * time.Second, seed: uint64(envInt("CHAOS_SEED", 1))}
	for name, d := range map[string]*time.Duration{"CHAOS_DURATION": &cfg.duration, "CHAOS_LEASE": &cfg.lease, "CHAOS_DEADLINE": &cfg.deadline} {
		if v := os.Getenv(name); v != "" {
			var err error
			if *d, err = time.ParseDuration(v); err != nil {
				t.Fatalf("%s=%s: %v", name, v, err)
			}
		}
	}
	return cfg
}

// harness is the state of one TestChaos.
type harness struct {
	c        *cluster
	cfg      chaosSize
	rng      *rand.Rand
	runs     []string
	started  [2]int // over HTTP, with the CLI
	deciders []*decider
	faults   map[string]int
	recovery map[string][]time.Duration
}

// decider is one attempt to decide a call, repeated while its outcome
// is unknown (a fault in the way).
type decider struct {
	run, via, action, reason string
	tok                      string
	detach                   bool          // the CLI's --detach; without, it runs the tool itself
	delay                    time.Duration // before the first attempt: lets the CLI win races too
	// Set by decide:
	outcome  string // won (2xx, exit 0 or 3), lost (409, exit 4), gave-up
	unsure   bool   // an attempt before the last may have been recorded
	attempts int
	last     string // the last answer, for messages
}

// round starts a batch of runs, waits for them to suspend, lets deciders
// race on their calls while a fault is injected, and waits for every run
// to come to rest.
func (h *harness) round(kind string) {
	t := h.c.t
	ids := h.startRuns(h.cfg.batch)
	h.waitFor("suspended for approval", time.Minute, func(v engine.RunView) bool {
		return !contains(ids, v.RunID) || v.Status == store.Suspended && len(v.Pending) == 1
	})
	var ds []*decider
	for _, id := range ids {
		n := 2 + h.rng.IntN(2)
		for k := range n {
			d := &decider{run: id, via: "http", action: "approve", detach: h.rng.IntN(3) > 0}
			if k == 1 || k == 2 && h.rng.IntN(2) == 0 {
				d.via = "cli"
			}
			if h.rng.IntN(8) == 0 {
				d.action = "decline"
			}
			d.tok = h.c.tokens[h.rng.IntN(len(h.c.tokens))]
			d.delay = time.Duration(h.rng.IntN(300)) * time.Millisecond
			d.reason = fmt.Sprintf("chaos-%s-%d-%s-%s", id, k, d.via, d.action)
			ds = append(ds, d)
		}
	}
	h.deciders = append(h.deciders, ds...)
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Add(1)
		go func() { defer wg.Done(); h.decide(d) }()
	}
	time.Sleep(time.Duration(h.rng.IntN(500)) * time.Millisecond) // a random moment, not a synchronisation
	end := h.c.inject(kind, h.rng)
	h.faults[kind]++
	wg.Wait()
	if !h.waitFor("at rest", h.cfg.deadline, atRest) {
		return
	}
	h.recovery[kind] = append(h.recovery[kind], time.Since(end))
	t.Logf("round %d: %s, %d runs at rest %v after the fault", len(h.runs)/h.cfg.batch, kind, len(ids), time.Since(end).Round(time.Millisecond))
}

// atRest: a run no process needs to advance: ended, or waiting for a
// human (a suspended run whose call was decided detached is not).
func atRest(v engine.RunView) bool {
	switch v.Status {
	case store.Completed, store.Failed, store.Stalled:
		return true
	case store.Suspended:
		return len(v.Pending) > 0
	}
	return false
}

// startRuns starts n runs, half over HTTP and half with the CLI
// (detached: a worker takes them to their approval).
func (h *harness) startRuns(n int) []string {
	t := h.c.t
	hc := newHTTPClient()
	var ids []string
	for i := range n {
		var v engine.RunView
		if i%2 == 0 {
			key := fmt.Sprintf("start-%d-%d", len(h.runs), i)
			status, body := 0, ""
			for try := 0; try < 50 && status != 201; try++ {
				if status, body = h.c.request(hc, "POST", "/v1/runs", h.c.tokens[0], key, `{"agent": "a", "input": "go"}`); status != 201 {
					time.Sleep(200 * time.Millisecond)
				}
			}
			if status != 201 || json.Unmarshal([]byte(body), &v) != nil {
				t.Fatalf("POST /v1/runs: %d %s", status, body)
			}
			h.started[0]++
		} else {
			out, errOut, err := h.c.cli(h.c.dsn, "run", "a", "-f", "spec.yaml", "--input", "go", "--detach", "-o", "json")
			if err != nil || json.Unmarshal([]byte(out), &v) != nil {
				t.Fatalf("agentctl run --detach: %v\n%s%s", err, out, errOut)
			}
			h.started[1]++
		}
		ids = append(ids, v.RunID)
	}
	h.runs = append(h.runs, ids...)
	return ids
}

// decide makes d's decision until it is answered for sure, or for up to
// two minutes: serve may be down, the database unreachable.
func (h *harness) decide(d *decider) {
	hc := newHTTPClient()
	time.Sleep(d.delay)
	deadline := time.Now().Add(2 * time.Minute)
	for ; time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		d.attempts++
		var won, lost bool
		if d.via == "http" {
			path := "/v1/runs/" + d.run + "/" + d.action
			if d.detach {
				path += "?wait=0s"
			}
			status, body := h.c.request(hc, "POST", path, d.tok, d.reason, fmt.Sprintf(`{"reason": %q}`, d.reason))
			// A call interrupted meanwhile (another decider's process
			// killed) is refused as such: decided by another.
			won, lost = status >= 200 && status < 300, status == 409 || status == 400 && strings.Contains(body, "was interrupted")
			d.last = fmt.Sprintf("status %d: %s", status, firstLine(strings.TrimSpace(body)))
		} else {
			args := []string{d.action, d.run, "--reason", d.reason}
			if d.detach {
				args = append(args, "--detach")
			}
			_, errOut, err := h.c.cli(h.c.dsn, args...)
			code := procExit(err)
			won, lost = code == 0 || code == 3, code == 4 || code == 2 && strings.Contains(errOut, "was interrupted")
			d.last = fmt.Sprintf("exit %d: %s", code, firstLine(strings.TrimSpace(errOut)))
		}
		switch {
		case won:
			d.outcome = "won"
			return
		case lost:
			d.outcome = "lost"
			return
		}
		d.unsure = true
	}
	d.outcome = "gave-up"
}

// list lists every run, through the database directly (not the proxy);
// nil when it cannot now (PostgreSQL restarting).
func (h *harness) list() []engine.RunView {
	out, _, err := h.c.cli(h.c.direct, "list", "--limit", "0", "-o", "json")
	var runs []engine.RunView
	if err != nil || json.Unmarshal([]byte(out), &runs) != nil {
		return nil
	}
	return runs
}

// waitFor waits until every run satisfies ok, up to wait; else it fails
// the test naming the runs that do not.
func (h *harness) waitFor(what string, wait time.Duration, ok func(engine.RunView) bool) bool {
	deadline := time.Now().Add(wait)
	for {
		runs := h.list()
		var bad []string
		for _, v := range runs {
			if !ok(v) {
				bad = append(bad, fmt.Sprintf("%s (%s, %d pending)", v.RunID, v.Status, len(v.Pending)))
			}
		}
		if runs != nil && len(bad) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			h.c.t.Errorf("not %s after %v: %d runs: %s (logs in %s)", what, wait, len(bad), strings.Join(bad, ", "), h.c.dir)
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}
