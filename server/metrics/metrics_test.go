package metrics

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentctl/agentctl/engine/store"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func stats(st store.Stats, err error) func(context.Context) (store.Stats, error) {
	return func(context.Context) (store.Stats, error) { return st, err }
}

func TestStoreMetrics(t *testing.T) {
	m := New(Options{Now: func() time.Time { return now }, Stats: stats(store.Stats{
		Runs:          map[store.Status]int{store.Suspended: 3, store.Completed: 7},
		Waiting:       map[store.Kind]int{store.KindApproval: 4, store.KindInterrupted: 1},
		OldestWaiting: now.Add(-90 * time.Second),
	}, nil)})
	want := `
# HELP agentctl_calls_waiting Calls waiting for a human, by kind (approval, suspend: resume data, interrupted: retry or resolve).
# TYPE agentctl_calls_waiting gauge
agentctl_calls_waiting{kind="approval"} 4
agentctl_calls_waiting{kind="interrupted"} 1
agentctl_calls_waiting{kind="suspend"} 0
# HELP agentctl_oldest_pending_approval_age_seconds How long the oldest call waiting for approval has waited; 0 when none waits.
# TYPE agentctl_oldest_pending_approval_age_seconds gauge
agentctl_oldest_pending_approval_age_seconds 90
# HELP agentctl_runs Runs in the store, by status.
# TYPE agentctl_runs gauge
agentctl_runs{status="completed"} 7
agentctl_runs{status="failed"} 0
agentctl_runs{status="queued"} 0
agentctl_runs{status="running"} 0
agentctl_runs{status="stalled"} 0
agentctl_runs{status="suspended"} 3
# HELP agentctl_store_up Whether the store answered the scrape's read in time (1) or not (0: the other agentctl_ store metrics are left out).
# TYPE agentctl_store_up gauge
agentctl_store_up 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"agentctl_calls_waiting", "agentctl_oldest_pending_approval_age_seconds", "agentctl_runs", "agentctl_store_up"); err != nil {
		t.Fatal(err)
	}
}

func TestStoreDown(t *testing.T) {
	slow := func(ctx context.Context) (store.Stats, error) {
		<-ctx.Done() // a store that does not answer
		return store.Stats{}, ctx.Err()
	}
	for name, f := range map[string]func(context.Context) (store.Stats, error){
		"error": stats(store.Stats{}, errors.New("database is locked")),
		"slow":  slow,
	} {
		m := New(Options{Stats: f, StatsTimeout: 20 * time.Millisecond})
		// The scrape succeeds: the store is reported down, its counts left out.
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != 200 || !strings.Contains(string(body), "\nagentctl_store_up 0\n") || strings.Contains(string(body), "agentctl_runs{") {
			t.Errorf("%s: got %d\n%s\nwant 200 with agentctl_store_up 0 and no agentctl_runs", name, rec.Code, body)
		}
	}
}

func TestEventMetrics(t *testing.T) {
	m := New(Options{})
	m.Decision("approve", "ok")
	m.Decision("approve", "ok")
	m.Decision("approve", "forbidden")
	m.ToolCall("deploy", "exec", "succeeded", 300*time.Millisecond)
	m.ModelCall("gpt", "openai", "ok", 2*time.Second, 120, 30)
	m.ModelCall("gpt", "openai", "error", time.Second, 0, 0)
	m.ObserveHTTP("POST /v1/runs/{id}/approve", 200, 3*time.Millisecond)
	m.ObserveHTTP("POST /v1/runs/{id}/approve", 409, time.Millisecond)
	m.ObserveHTTP("POST /v1/runs/{id}/approve", 409, time.Millisecond)
	m.ObserveHTTP("POST /v1/runs/{id}/resume", 202, time.Millisecond)
	m.ObserveHTTP("GET /v1/runs/{id}", 200, time.Millisecond) // not a decision
	want := `
# HELP agentctl_decisions_total Decisions asked of the server, by action (approve, decline, resume, retry, resolve, continue, send) and outcome (ok, or the error's code: invalid, unauthenticated, forbidden, not_found, conflict, too_large, rate_limited, unavailable, error).
# TYPE agentctl_decisions_total counter
agentctl_decisions_total{action="approve",outcome="conflict"} 2
agentctl_decisions_total{action="approve",outcome="forbidden"} 1
agentctl_decisions_total{action="approve",outcome="ok"} 3
agentctl_decisions_total{action="resume",outcome="ok"} 1
# HELP agentctl_model_tokens_total Tokens models took in and gave out, by model and direction (input, output).
# TYPE agentctl_model_tokens_total counter
agentctl_model_tokens_total{direction="input",model="gpt"} 120
agentctl_model_tokens_total{direction="output",model="gpt"} 30
# HELP agentctl_http_requests_total HTTP requests served, by route (its pattern, such as POST /v1/runs/{id}/approve) and status code.
# TYPE agentctl_http_requests_total counter
agentctl_http_requests_total{code="200",route="GET /v1/runs/{id}"} 1
agentctl_http_requests_total{code="200",route="POST /v1/runs/{id}/approve"} 1
agentctl_http_requests_total{code="409",route="POST /v1/runs/{id}/approve"} 2
agentctl_http_requests_total{code="202",route="POST /v1/runs/{id}/resume"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"agentctl_decisions_total", "agentctl_model_tokens_total", "agentctl_http_requests_total"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		labels []string
		count  int
	}{
		{"agentctl_tool_call_duration_seconds", []string{`tool="deploy"`, `toolkit="exec"`, `outcome="succeeded"`}, 1},
		{"agentctl_model_call_duration_seconds", []string{`model="gpt"`, `provider="openai"`, `outcome="error"`}, 1},
		{"agentctl_http_request_duration_seconds", []string{`route="POST /v1/runs/{id}/approve"`, `code="409"`}, 2},
	} {
		if got := sampleCount(t, m, tc.name, tc.labels); got != tc.count {
			t.Errorf("%s%v: %d observations, want %d", tc.name, tc.labels, got, tc.count)
		}
	}
	// 0.3s of the tool call falls in the 0.5s bucket, not the 0.25s one.
	body := scrape(t, m)
	for _, line := range []string{
		`agentctl_tool_call_duration_seconds_bucket{outcome="succeeded",tool="deploy",toolkit="exec",le="0.25"} 0`,
		`agentctl_tool_call_duration_seconds_bucket{outcome="succeeded",tool="deploy",toolkit="exec",le="0.5"} 1`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("missing %s", line)
		}
	}
}

func TestLint(t *testing.T) {
	m := New(Options{Stats: stats(store.Stats{}, nil)})
	m.Decision("approve", "ok")
	m.ToolCall("t", "exec", "succeeded", time.Second)
	m.ModelCall("m", "p", "ok", time.Second, 1, 1)
	m.ObserveHTTP("GET /healthz", 200, time.Millisecond)
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "agentctl_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
}

func TestOwnRegistry(t *testing.T) {
	// Two servers in one process (tests) do not collide.
	a, b := New(Options{}), New(Options{})
	a.Decision("approve", "ok")
	if strings.Contains(scrape(t, b), "agentctl_decisions_total{") {
		t.Fatal("a decision counted by one Metrics shows in another's")
	}
}

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// sampleCount is the observation count of histogram name with labels.
func sampleCount(t *testing.T, m *Metrics, name string, labels []string) int {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, met := range mf.GetMetric() {
			have := map[string]bool{}
			for _, l := range met.GetLabel() {
				have[l.GetName()+`="`+l.GetValue()+`"`] = true
			}
			for _, l := range labels {
				if !have[l] {
					continue next
				}
			}
			return int(met.GetHistogram().GetSampleCount())
		}
	}
	return 0
}

// A flood of scrapes reads the store once a second at most.
func TestStatsReadOncePerSecond(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	reads := 0
	m := New(Options{Now: func() time.Time { return now }, Stats: func(context.Context) (store.Stats, error) {
		reads++
		return store.Stats{}, nil
	}})
	for range 5 {
		scrape(t, m)
	}
	if reads != 1 {
		t.Fatalf("5 scrapes within a second read the store %d times, want 1", reads)
	}
	now = now.Add(1500 * time.Millisecond)
	scrape(t, m)
	if reads != 2 {
		t.Fatalf("a scrape 1.5s later: %d reads, want 2", reads)
	}
}
