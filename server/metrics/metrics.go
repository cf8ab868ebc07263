// Package metrics holds agentctl serve's Prometheus metrics, on a
// registry of their own (never the process-wide default one), served at
// /metrics.
//
// What the store holds (runs by status, calls waiting by kind, the age
// of the oldest pending approval) is read at scrape time from
// store.ServerStore.Stats; a store that cannot answer in time reports
// agentctl_store_up 0 instead of failing the scrape. What happens
// (decisions, tool and model calls, HTTP requests) is counted as it
// happens, through the methods of Metrics: Metrics is the engine's
// Observer and the server's ObserveHTTP hook.
package metrics

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/internal/health"
)

// Options tune Metrics. Zero fields take defaults.
type Options struct {
	// Stats reads the store's counts at scrape time (ServerStore.Stats);
	// nil: no store metrics.
	Stats func(context.Context) (store.Stats, error)
	// StatsTimeout bounds the Stats read of a scrape; default 2s.
	StatsTimeout time.Duration
	// Now is the clock for ages; default time.Now.
	Now func() time.Time
	// Loops, when set, are the process's loops that wait on the
	// database: agentctl_loop_up says whether each works.
	Loops *health.Loops
}

// DefaultStatsTimeout bounds a scrape's read of the store.
const DefaultStatsTimeout = 2 * time.Second

// Metrics is the server's metrics. Its methods are safe for concurrent
// use.
type Metrics struct {
	reg        *prometheus.Registry
	decisions  *prometheus.CounterVec
	toolCalls  *prometheus.HistogramVec
	modelCalls *prometheus.HistogramVec
	tokens     *prometheus.CounterVec
	requests   *prometheus.CounterVec
	durations  *prometheus.HistogramVec
	escalated  *prometheus.CounterVec
	rules      *prometheus.CounterVec // policy rules: rules.go
}

// Buckets of the duration histograms, in seconds: tools and models
// take from milliseconds to minutes, HTTP requests from microseconds to
// a decision's wait (30s by default).
var (
	callBuckets = []float64{.005, .025, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	httpBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
)

// New returns the metrics on a new registry, with the Go runtime's and
// the process's metrics besides agentctl's.
func New(opts Options) *Metrics {
	if opts.StatsTimeout <= 0 {
		opts.StatsTimeout = DefaultStatsTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentctl_decisions_total",
			Help: "Decisions asked of the server, by action (approve, decline, resume, retry, resolve, continue, send) and outcome (ok, or the error's code: invalid, unauthenticated, forbidden, not_found, conflict, too_large, rate_limited, unavailable, error).",
		}, []string{"action", "outcome"}),
		toolCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agentctl_tool_call_duration_seconds",
			Help:    "How long tool calls ran, by tool, toolkit and outcome (succeeded, failed, suspended, interrupted).",
			Buckets: callBuckets,
		}, []string{"tool", "toolkit", "outcome"}),
		modelCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agentctl_model_call_duration_seconds",
			Help:    "How long model turns took, by model, provider and outcome (ok, error).",
			Buckets: callBuckets,
		}, []string{"model", "provider", "outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentctl_model_tokens_total",
			Help: "Tokens models took in and gave out, by model and direction (input, output).",
		}, []string{"model", "direction"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentctl_http_requests_total",
			Help: "HTTP requests served, by route (its pattern, such as POST /v1/runs/{id}/approve) and status code.",
		}, []string{"route", "code"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agentctl_http_request_duration_seconds",
			Help:    "How long HTTP requests took to answer, by route and status code.",
			Buckets: httpBuckets,
		}, []string{"route", "code"}),
		escalated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentctl_escalations_total",
			Help: "Steps of escalation ladders this process took, by step (its place in the ladder, from 1) and kind (remind, addApprovers, decide).",
		}, []string{"step", "kind"}),
	}
	m.rules = newRules(m.reg)
	m.reg.MustRegister(m.decisions, m.toolCalls, m.modelCalls, m.tokens, m.requests, m.durations, m.escalated,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if opts.Stats != nil {
		m.reg.MustRegister(newStoreCollector(opts))
	}
	if opts.Loops != nil {
		m.reg.MustRegister(loopCollector{opts.Loops})
	}
	return m
}

// loopUp is agentctl_loop_up.
var loopUp = prometheus.NewDesc("agentctl_loop_up",
	"Whether a loop that waits on the database works (1) or not (0: the database restarted or the connection dropped; it connects again by itself), by loop (work: waiting for work; events: the event streams and the notifications' outbox).",
	[]string{"loop"}, nil)

// loopCollector reports the loops' state at scrape time.
type loopCollector struct{ loops *health.Loops }

func (c loopCollector) Describe(ch chan<- *prometheus.Desc) { ch <- loopUp }

func (c loopCollector) Collect(ch chan<- prometheus.Metric) {
	for name, up := range c.loops.State() {
		v := 0.0
		if up {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(loopUp, prometheus.GaugeValue, v, name)
	}
}

// Metrics is the engine's Observer.
var (
	_ engine.Observer           = (*Metrics)(nil)
	_ engine.EscalationObserver = (*Metrics)(nil)
)

// Registry returns the registry the metrics are on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in Prometheus' exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Decision counts a decision asked of the server: action is the route's
// (approve, decline, resume, retry, resolve, continue, send), outcome
// ok or the error class that refused it (forbidden, conflict, ...).
func (m *Metrics) Decision(action, outcome string) {
	m.decisions.WithLabelValues(action, outcome).Inc()
}

// Escalation records a step of an escalation ladder this process took
// (engine.EscalationObserver).
func (m *Metrics) Escalation(step int, kind string) {
	m.escalated.WithLabelValues(strconv.Itoa(step), kind).Inc()
}

// ToolCall records a tool call that ran for d (engine.Observer).
func (m *Metrics) ToolCall(tool, toolkit, outcome string, d time.Duration) {
	m.toolCalls.WithLabelValues(tool, toolkit, outcome).Observe(d.Seconds())
}

// ModelCall records a model turn that took d and the tokens it took in
// and gave out (engine.Observer).
func (m *Metrics) ModelCall(model, provider, outcome string, d time.Duration, inTokens, outTokens int) {
	m.modelCalls.WithLabelValues(model, provider, outcome).Observe(d.Seconds())
	if inTokens > 0 {
		m.tokens.WithLabelValues(model, "input").Add(float64(inTokens))
	}
	if outTokens > 0 {
		m.tokens.WithLabelValues(model, "output").Add(float64(outTokens))
	}
}

// ObserveHTTP records a request to route (the pattern it matched, never
// the raw path: ids would make a series each) answered with code after
// d. A request to a decision's route (POST /v1/runs/{id}/approve, ...)
// is counted as a Decision too, its outcome read from code.
func (m *Metrics) ObserveHTTP(route string, code int, d time.Duration) {
	c := strconv.Itoa(code)
	m.requests.WithLabelValues(route, c).Inc()
	m.durations.WithLabelValues(route, c).Observe(d.Seconds())
	if action, ok := strings.CutPrefix(route, "POST /v1/runs/{id}/"); ok && slices.Contains(decisionActions, action) {
		m.Decision(action, outcomeOf(code))
	}
}

// decisionActions are the routes counted as decisions.
var decisionActions = []string{"approve", "decline", "resume", "retry", "resolve", "continue", "send"}

// outcomeOf is a decision's outcome from its response's status: ok, or
// the error class of the API's error object.
func outcomeOf(code int) string {
	if code < 300 {
		return "ok"
	}
	return cmp.Or(api.CodeOf(code), "error")
}

// statuses and kinds are reported even at zero, so that a series does
// not vanish when the last run leaves a status.
var (
	statuses = []store.Status{store.Queued, store.Running, store.Suspended, store.Stalled, store.Completed, store.Failed}
	kinds    = []store.Kind{store.KindApproval, store.KindSuspend, store.KindInterrupted}
)

// statsTTL is how long a read of the store's counts serves scrapes: a
// flood of scrapes (GET /metrics needs no credentials) reads the store
// once a second at most.
const statsTTL = time.Second

// storeCollector reads the store's counts at scrape time.
type storeCollector struct {
	opts Options

	mu      sync.Mutex // serialises reads; guards last, lastErr and at
	last    store.Stats
	lastErr error
	at      time.Time // zero: never read

	up      *prometheus.Desc
	runs    *prometheus.Desc
	waiting *prometheus.Desc
	oldest  *prometheus.Desc
}

func newStoreCollector(opts Options) *storeCollector {
	return &storeCollector{
		opts: opts,
		up:   prometheus.NewDesc("agentctl_store_up", "Whether the store answered the scrape's read in time (1) or not (0: the other agentctl_ store metrics are left out).", nil, nil),
		runs: prometheus.NewDesc("agentctl_runs", "Runs in the store, by status.", []string{"status"}, nil),
		waiting: prometheus.NewDesc("agentctl_calls_waiting", "Calls waiting for a human, by kind (approval, suspend: resume data, interrupted: retry or resolve).",
			[]string{"kind"}, nil),
		oldest: prometheus.NewDesc("agentctl_oldest_pending_approval_age_seconds", "How long the oldest call waiting for approval has waited; 0 when none waits.", nil, nil),
	}
}

// stats reads the store's counts, or returns what a read less than
// statsTTL ago gave (a failure too).
func (c *storeCollector) stats() (store.Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.opts.Now(); !c.at.IsZero() && now.Sub(c.at) < statsTTL && !now.Before(c.at) {
		return c.last, c.lastErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.StatsTimeout)
	defer cancel()
	c.last, c.lastErr = c.opts.Stats(ctx)
	c.at = c.opts.Now()
	return c.last, c.lastErr
}

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.runs
	ch <- c.waiting
	ch <- c.oldest
}

// Collect implements prometheus.Collector: one read of the store,
// bounded by StatsTimeout.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.stats()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	for _, s := range statuses {
		ch <- prometheus.MustNewConstMetric(c.runs, prometheus.GaugeValue, float64(st.Runs[s]), string(s))
	}
	for s, n := range st.Runs {
		if !slices.Contains(statuses, s) {
			ch <- prometheus.MustNewConstMetric(c.runs, prometheus.GaugeValue, float64(n), string(s))
		}
	}
	for _, k := range kinds {
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(st.Waiting[k]), string(k))
	}
	for k, n := range st.Waiting {
		if !slices.Contains(kinds, k) && k != store.KindDelegation {
			ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(n), string(k))
		}
	}
	age := 0.0
	if !st.OldestWaiting.IsZero() {
		age = max(c.opts.Now().Sub(st.OldestWaiting).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age)
}
