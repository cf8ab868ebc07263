package main

import (
	"math/rand/v2"
	"net/http"
	"syscall"
	"time"
)

// faultKinds are the faults TestChaos injects, one a round, in turn:
// serve and a worker killed with SIGKILL, a worker stopped with SIGTERM
// while a tool runs, PostgreSQL restarted (pg_ctl restart -m fast),
// every TCP connection to it dropped, and the database unreachable for
// a while (the proxy refuses connections), /readyz checked meanwhile.
func faultKinds() []string {
	return []string{"kill-serve", "kill-worker", "term-worker", "pg-restart", "cut-tcp", "db-outage"}
}

// inject injects one fault, restarts what it stopped, and returns when
// the fault ended: the restarted process is up, the database back.
func (c *cluster) inject(kind string, rng *rand.Rand) time.Time {
	switch kind {
	case "kill-serve":
		c.mu.Lock()
		p := c.serve
		c.mu.Unlock()
		c.signal(p, syscall.SIGKILL)
		c.startServe()
	case "kill-worker", "term-worker":
		i := c.workerRunning(3 * time.Second)
		if i < 0 {
			i = rng.IntN(chaosWorkers)
		}
		sig := syscall.SIGKILL
		if kind == "term-worker" {
			sig = syscall.SIGTERM
		}
		c.mu.Lock()
		p := c.workers[i]
		c.mu.Unlock()
		c.signal(p, sig)
		c.startWorker(i)
	case "pg-restart":
		if err := c.pg.Restart(); err != nil {
			c.t.Fatal(err)
		}
	case "cut-tcp":
		c.proxy.CutAll()
	case "db-outage":
		c.outage()
	default:
		c.t.Fatalf("unknown fault %q", kind)
	}
	return time.Now()
}

// outage makes the database unreachable until /readyz answers 503, for
// a second more, then reachable again until /readyz answers 200.
func (c *cluster) outage() {
	c.proxy.Refuse(true, false)
	c.proxy.CutAll()
	if !c.readyzUntil(http.StatusServiceUnavailable, 30*time.Second) {
		c.t.Errorf("/readyz did not answer 503 within 30s of the database going down")
	}
	time.Sleep(time.Second)
	c.proxy.Refuse(false, false)
	if !c.readyzUntil(http.StatusOK, time.Minute) {
		c.t.Errorf("/readyz did not answer 200 within a minute of the database coming back")
	}
}

// readyzUntil polls /readyz until it answers status, up to wait.
func (c *cluster) readyzUntil(status int, wait time.Duration) bool {
	hc := newHTTPClient()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if got, _ := c.request(hc, "GET", "/readyz", "", "", ""); got == status {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}
