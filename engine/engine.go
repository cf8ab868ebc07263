// Package engine compiles specs into runtime graphs and runs them: the
// agent loop (model turn, tool calls, approval gate, execution) with a
// durable checkpoint after every step, so that a run suspended for a human
// is continued later by any process.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"go.opentelemetry.io/otel/trace"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/internal/names"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/toolkits"
)

// Config configures an Engine. Zero fields take defaults.
type Config struct {
	// Models are the model providers; default model.Default().
	Models model.Registry
	// Toolkits build the tools of the specs the engine runs; default
	// builtin.Table().
	Toolkits toolkits.Table
	// LeaseTTL is how long a run stays held by a process that stops
	// renewing it (a crashed one). Default 60s.
	LeaseTTL time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// OnEvent, when set, receives each event of the runs this engine
	// advances, once it is stored (agentctl --events), one call at a
	// time. With it set, models stream: text-delta events arrive live
	// while the model speaks, before the step that holds them is stored,
	// with the spec's secrets cut (a tail that could begin one waits);
	// the stored log keeps one text-delta per step with the whole text.
	OnEvent func(store.Event)
	// Busy, when set, is called as a model call or a tool call starts,
	// with what it is ("model m", "tool restart"), and the function it
	// returns as that call ends (agentctl's spinner on a terminal).
	Busy func(what string) (done func())
	// Delegates are OS users allowed to decide on behalf of others for
	// every spec, besides each spec's policy.delegates (the
	// administrator's file).
	Delegates []string
	// Names is what a name given to act on behalf of (--as) may hold;
	// default: ASCII (names.Profile). A server sets its own.
	Names names.Profile
	// Groups returns the OS groups of a user, for approvers such as
	// group:sre; default: the system's (os/user).
	Groups func(user string) ([]string, error)
	// Limits cap what the engine takes from models and tools.
	Limits Limits
	// Replay names the cassette Models answer from (run --replay); runs
	// started with one are advanced only with one.
	Replay string
	// Record names the cassette each model exchange is appended to (run
	// --record): the answer as the run keeps it, its secrets cut.
	Record string
	// Stop, once closed, asks the engine to stop advancing runs
	// gracefully (SIGTERM): the step in flight (a tool running, a model
	// turn) goes on under its context, then its run is checkpointed and
	// released, as when the context ends; a worker pool claims nothing
	// more. Ending the context stops the step in flight too.
	Stop <-chan struct{}
	// Observer, when set, is told how long each tool call and model
	// turn took (agentctl serve's metrics).
	Observer Observer
	// Tracer, when set, records the spans of runs, model calls, tool
	// calls and decisions (OpenTelemetry; see trace.go); nil: none.
	Tracer trace.Tracer
	// TraceContent adds what models answered and the arguments and
	// results of tool calls to spans, as stored: redacted
	// (AGENTCTL_TRACE_CONTENT=1). Off: no content at all.
	TraceContent bool
}

// Observer is told how long the engine's tool calls and model turns take.
// Its methods are called by the goroutines that advance runs, at once and
// concurrently: they must be quick and safe for concurrent use.
type Observer interface {
	// ToolCall reports a tool call that ran (not one skipped or
	// suspended before it ran) for d: tool is agentctl's name for it,
	// toolkit its declaration's kind (exec, http, file, output, mcp),
	// outcome succeeded, failed or interrupted.
	ToolCall(tool, toolkit, outcome string, d time.Duration)
	// ModelCall reports a model turn that took d: model is the
	// provider's model name (the spec's name for it when it has none),
	// outcome ok, error or interrupted, and the tokens it took in and
	// gave out.
	ModelCall(model, provider, outcome string, d time.Duration, inTokens, outTokens int)
}

// Limits cap what a run takes in from outside, so that a runaway model or
// tool cannot fill the database. Zero values mean the defaults.
type Limits struct {
	// MaxArgs is the largest tool-call arguments a model may send, in
	// bytes (default DefaultMaxArgs). A call over it fails at once: its
	// arguments are not stored, and the model is told.
	MaxArgs int
	// MaxResult is the largest tool result stored, in bytes (default
	// DefaultMaxResult); the rest is cut off and counted.
	MaxResult int
}

// Default limits.
const (
	DefaultMaxArgs   = 1 << 20
	DefaultMaxResult = 1 << 20
)

// Engine runs agents on a Store.
type Engine struct {
	store   store.Store
	models  model.Registry
	kits    toolkits.Table
	lease   store.Lease
	now     func() time.Time
	onEvent func(store.Event)
	busy    func(string) func()
	emitMu  sync.Mutex // serialises onEvent

	delegates []string
	names     names.Profile
	groups    func(string) ([]string, error)
	limits    Limits
	replay    string
	recorder  *model.Recorder // nil: nothing is recorded (run --record)

	stop         <-chan struct{}
	inflight     atomic.Int64 // steps under way
	observer     Observer     // nil: nobody is told
	tracer       trace.Tracer // nil: no tracing, and no span built
	traceContent bool

	mu     sync.Mutex
	graphs map[string]*Graph // compiled snapshots by hash
	plain  []store.Plain     // the graphs' plain tools, gathered (plainTools)
	plainN int               // of that many graphs
	quiet  map[string]bool   // snapshots by hash that name no notify target (Notify)
}

// New returns an Engine keeping runs in st.
func New(st store.Store, cfg Config) *Engine {
	if cfg.Models == nil {
		cfg.Models = model.Default()
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = 60 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Groups == nil {
		cfg.Groups = groupsOf
	}
	if cfg.Limits.MaxArgs <= 0 {
		cfg.Limits.MaxArgs = DefaultMaxArgs
	}
	if cfg.Limits.MaxResult <= 0 {
		cfg.Limits.MaxResult = DefaultMaxResult
	}
	var rec *model.Recorder
	if cfg.Record != "" {
		rec = model.NewRecorder(cfg.Record)
	}
	host, _ := os.Hostname()
	var tok [6]byte
	rand.Read(tok[:])
	return &Engine{
		store:   st,
		models:  cfg.Models,
		kits:    cfg.Toolkits,
		lease:   store.Lease{Owner: newHolder(host, os.Getpid(), hex.EncodeToString(tok[:]), selfIdentity()), TTL: cfg.LeaseTTL},
		now:     cfg.Now,
		onEvent: cfg.OnEvent,
		busy:    cfg.Busy,

		delegates:    cfg.Delegates,
		names:        cfg.Names,
		groups:       cfg.Groups,
		limits:       cfg.Limits,
		replay:       cfg.Replay,
		recorder:     rec,
		stop:         cfg.Stop,
		observer:     cfg.Observer,
		tracer:       cfg.Tracer,
		traceContent: cfg.TraceContent,
		graphs:       map[string]*Graph{},
		quiet:        map[string]bool{},
	}
}

// stopping reports whether the engine was asked to stop (Config.Stop).
func (e *Engine) stopping() bool {
	select {
	case <-e.stop:
		return true
	default:
		return false
	}
}

// Busy reports whether the engine is advancing a run: a step (a tool, a
// model turn) is under way, which a graceful stop lets finish.
func (e *Engine) Busy() bool { return e.inflight.Load() > 0 }

// Compile compiles a spec with the engine's model providers and
// toolkits.
func (e *Engine) Compile(s *spec.Spec) (*Graph, error) { return Compile(s, e.models, e.kits) }

// Names is the profile names given to act on behalf of are checked
// against (Config.Names).
func (e *Engine) Names() names.Profile { return e.names }

// newRunID returns a new run id: a ULID, sortable by creation time and
// carrying 80 random bits.
func (e *Engine) newRunID() string {
	return ulid.MustNew(ulid.Timestamp(e.now()), rand.Reader).String()
}

// graph returns the compiled spec a run started with.
func (e *Engine) graph(ctx context.Context, hash string) (*Graph, error) {
	e.mu.Lock()
	g := e.graphs[hash]
	e.mu.Unlock()
	if g != nil {
		return g, nil
	}
	snap, err := e.store.Spec(ctx, hash)
	if err != nil {
		return nil, err
	}
	g, err = LoadSnapshot(snap, e.models, e.kits)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.graphs[hash] = g
	e.mu.Unlock()
	return g, nil
}

// plainTools are the tools of the graphs this engine has compiled whose
// calls a worker's claim may start (store.Plain); a run of a snapshot
// not compiled yet has none started by its claim. The slice is shared:
// read only.
func (e *Engine) plainTools() []store.Plain {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.plainN != len(e.graphs) { // graphs are only added
		var all []store.Plain
		for _, g := range e.graphs {
			all = append(all, g.plain...)
		}
		e.plain, e.plainN = all, len(e.graphs)
	}
	return e.plain
}

// Holder names the engine's process as its leases do: HolderDead tells
// from it whether the process died.
func (e *Engine) Holder() string { return e.lease.Owner }

// Close stops what the engine's graphs started (MCP servers).
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for _, g := range e.graphs {
		errs = append(errs, g.Close())
	}
	return errors.Join(errs...)
}

// heartbeat renews the lease on a run until stop is called.
func (e *Engine) heartbeat(ctx context.Context, runID string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A failed renewal shows up as ErrLeaseLost on the next write.
		every(ctx, e.lease.TTL/3, func() { _ = e.store.Renew(ctx, e.lease, runID) })
	}()
	return func() { cancel(); <-done }
}

// every calls f every d until ctx is done.
func every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}
