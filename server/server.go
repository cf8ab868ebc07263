// Package server is agentctl serve: one process owns the store, advances
// runs with the engine's worker pool, and serves a JSON HTTP API under
// /v1 where identity (a Unix socket peer, a bearer token, a trusted
// proxy's header) and the approver policy are enforced. docs/server.md
// describes it.
package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/internal/health"
	"github.com/agentctl/agentctl/internal/wait"
	"github.com/agentctl/agentctl/server/sse"
)

// Options configure a Server. Store, Engine and Config are required.
type Options struct {
	Store  store.ServerStore
	Engine *engine.Engine // the server's engine, which its worker pool runs too
	Config *Config
	Specs  *Specs // the configured specs; nil: none
	Log    *slog.Logger
	// Work is the context runs advance under once a request has
	// answered; default context.Background(). It ends when the server's
	// grace period is over.
	Work context.Context
	Now  func() time.Time

	// Metrics, when set, is served at /metrics (without authentication:
	// it reports counts only).
	Metrics http.Handler
	// Loops, when set, are the server's loops that wait on the database
	// (its workers', its event streams', its outbox's): while one fails,
	// /readyz answers 503 and names it.
	Loops *health.Loops
	// ObserveHTTP, when set, is called once per request with the route's
	// pattern (not the raw path), the status and the duration.
	ObserveHTTP func(route string, code int, d time.Duration)
	// OpenAPI is served at /v1/openapi.json; default api.OpenAPI().
	OpenAPI []byte
	// Events serves GET /v1/runs/{id}/events (f.RunID set) and GET
	// /v1/events (f empty), once the caller is known to be a reader;
	// default: the store's feed as Server-Sent Events, looked at every
	// EventsPoll (agentctl serve wakes its streams on PostgreSQL's
	// notifications instead).
	Events func(w http.ResponseWriter, r *http.Request, f store.FeedFilter)
	// UI, when set, makes the handler of every path outside /v1 and the
	// health and metrics routes: the browser inbox (server/web). It is
	// called once, by New.
	UI func(s *Server) http.Handler
	// Slack, when set, makes the handler of POST /slack/interactions:
	// Slack's button presses and forms (server/slack), which authenticate
	// by Slack's signature rather than the server's credentials. It is
	// called once, by New.
	Slack func(s *Server) http.Handler
	// TokenRecheck is how often an event stream opened with a token
	// looks the token up again: one revoked meanwhile ends the stream
	// (one that expires ends it at once). Default 10s.
	TokenRecheck time.Duration
}

// EventsPoll is how often the default event streams look at the feed.
const EventsPoll = 200 * time.Millisecond

// Server serves the API.
type Server struct {
	store store.ServerStore
	eng   *engine.Engine
	cfg   *Config
	roles roles
	specs *Specs
	log   *slog.Logger
	now   func() time.Time
	limit *limiters
	opts  Options
	work  context.Context
	mux   *http.ServeMux

	// csrfKey keys the CSRF tokens of the proxy's users (CSRF). It is
	// this process's: such a page made by another server, or before a
	// restart, asks for a reload.
	csrfKey [32]byte

	tokenNames tokenNames // for the look-alike check of the proxy's names

	stopOnce sync.Once
	stopped  chan struct{} // closed by Stop
	bg       sync.WaitGroup
}

// New returns a server.
func New(o Options) (*Server, error) {
	if o.Store == nil || o.Engine == nil || o.Config == nil {
		return nil, errors.New("server: Store, Engine and Config are required")
	}
	if o.Engine.Names() != o.Config.NameProfile() {
		return nil, errors.New("server: the engine checks names (engine.Config.Names) otherwise than the configuration says (names:)")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Work == nil {
		o.Work = context.Background()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TokenRecheck <= 0 {
		o.TokenRecheck = 10 * time.Second
	}
	if o.OpenAPI == nil {
		o.OpenAPI = api.OpenAPI()
	}
	if o.Events == nil {
		o.Events = sse.Handler(o.Store, poll(EventsPoll), sse.Options{})
	}
	if o.Config.maxBody == 0 {
		o.Config.check(&checker{errs: &ConfigError{}}, nil) // a Config made in Go: the defaults
	}
	s := &Server{store: o.Store, eng: o.Engine, cfg: o.Config, roles: rolesOf(o.Config), specs: o.Specs, log: o.Log,
		now: o.Now, limit: newLimiters(o.Config.RateLimit), opts: o, work: o.Work, mux: http.NewServeMux(), stopped: make(chan struct{})}
	rand.Read(s.csrfKey[:])
	s.routes()
	return s, nil
}

// poll waits d, or until ctx ends.
func poll(d time.Duration) func(context.Context) error {
	return func(ctx context.Context) error { return wait.For(ctx, d) }
}

// Handler is the server's HTTP handler. Every response carries the
// Content-Security-Policy, and says its type is as declared.
func (s *Server) Handler() http.Handler {
	return s.logged(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		s.mux.ServeHTTP(w, r)
	}))
}

// Stop stops taking work: /readyz answers 503, requests that change
// state are refused (503), and requests waiting for a run answer at
// once with the run as it stands.
func (s *Server) Stop() { s.stopOnce.Do(func() { close(s.stopped) }) }

// stopping reports whether Stop was called.
func (s *Server) stopping() bool {
	select {
	case <-s.stopped:
		return true
	default:
		return false
	}
}

// Wait waits for the runs the server went on advancing after answering.
func (s *Server) Wait() { s.bg.Wait() }

// Timeouts of the HTTP server.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 64 << 10
)

// Serve serves on the listeners (TCP ones with tlsCfg, when set) until
// ctx ends or stop is closed; then it stops taking requests, lets those
// in flight finish for up to grace, and waits for the runs it advances
// (which the engine's own stop checkpoints and releases).
func (s *Server) Serve(ctx context.Context, lns []net.Listener, tlsCfg *tls.Config, stop <-chan struct{}, grace time.Duration) error {
	reqCtx, endRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer endRequests()
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnContext:       connContext,
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errs := make(chan error, len(lns))
	for _, ln := range lns {
		if _, unix := ln.(*net.UnixListener); !unix && tlsCfg != nil {
			ln = tls.NewListener(ln, tlsCfg)
		}
		go func() { errs <- srv.Serve(ln) }()
	}
	stopPrune := s.startPrune(ctx)
	var err error
	select {
	case <-ctx.Done():
	case <-stop:
	case err = <-errs:
		err = fmt.Errorf("serve: %w", err)
	}
	stopPrune()
	s.Stop()
	endRequests() // event streams end
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		srv.Close()
	}
	s.Wait()
	return err
}

// routes registers every route.
func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", s.public("GET /healthz", s.healthz))
	s.mux.HandleFunc("GET /readyz", s.public("GET /readyz", s.readyz))
	s.mux.HandleFunc("GET /metrics", s.public("GET /metrics", s.metrics))
	s.mux.HandleFunc("GET /v1/openapi.json", s.public("GET /v1/openapi.json", s.openapi))
	s.route("GET /v1/whoami", "", s.whoami)
	s.route("GET /v1/runs", RoleReader, s.listRuns)
	s.route("GET /v1/runs/{id}", RoleReader, s.getRun)
	s.route("POST /v1/runs", RoleRunner, s.idempotent(http.StatusCreated, s.startRun))
	for _, a := range []store.Action{store.Approve, store.Decline, store.Resume, store.Retry, store.Resolve} {
		s.route("POST /v1/runs/{id}/"+string(a), "", s.idempotent(http.StatusOK, s.decide(a)))
	}
	s.route("POST /v1/runs/{id}/continue", RoleRunner, s.continueRun)
	s.route("POST /v1/runs/{id}/send", RoleRunner, s.send)
	s.route("GET /v1/approvals", "", s.approvals)
	s.route("GET /v1/runs/{id}/events", RoleReader, s.runEvents)
	s.route("GET /v1/events", RoleReader, s.allEvents)
	s.route("GET /v1/audit", RoleReader, s.audit)
	s.route("GET /v1/status", RoleReader, s.status)
	s.mux.HandleFunc("/v1/", s.public("/v1/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, &apiError{body: apiErr404("no such route: " + r.Method + " " + r.URL.Path), status: http.StatusNotFound})
	}))
	if s.opts.Slack != nil {
		s.mux.Handle("POST /slack/interactions", s.public("POST /slack/interactions", s.opts.Slack(s).ServeHTTP))
	}
	if s.opts.UI != nil {
		ui := s.opts.UI(s)
		s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			if infoOf(r).route == "" {
				infoOf(r).route = "ui"
			}
			ui.ServeHTTP(w, r)
		})
	}
}

// Route names the route of a request in the log and metrics (the
// inbox's own routes).
func Route(r *http.Request, pattern string) {
	if info := infoOf(r); info != nil {
		info.route = pattern
	}
}

// public wraps a handler that needs no credentials.
func (s *Server) public(pattern string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		infoOf(r).route = pattern
		h(w, r)
	}
}

// handler serves an authenticated request.
type handler func(w http.ResponseWriter, r *http.Request, p *Principal) error

// route registers a handler that needs credentials and, unless need is
// empty, a role.
func (s *Server) route(pattern, need string, h handler) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		info := infoOf(r)
		info.route = pattern
		r.Header.Del("Cookie") // /v1 never takes a browser's ambient credentials
		// Failed authentications spend a bucket of their own, per address:
		// once it is spent, a failure answers 429, and guessing goes no
		// faster. A valid token from the same address still passes: a
		// guesser there does not lock out the others behind it (a proxy,
		// every local user on loopback).
		failed := failedKey(r)
		p, err := s.authenticate(r)
		if err != nil {
			var ae *authError
			if errors.As(err, &ae) {
				if s.limit.spent(failed) {
					err = errRateLimited
				}
				s.limit.bucket(failed).Allow()
			}
			s.writeError(w, r, err)
			return
		}
		info.principal = p
		if !s.limit.allow(p) {
			s.writeError(w, r, errRateLimited)
			return
		}
		if err := s.admit(r, p, need); err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := h(w, r, p); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// admit checks what a request needs besides credentials: a role, a
// server that is not stopping for a change, and, for a change made
// through the proxy's header, a JSON body and a same-origin Origin (no
// cross-site forgery with a browser's ambient credentials).
func (s *Server) admit(r *http.Request, p *Principal, need string) error {
	change := r.Method != http.MethodGet && r.Method != http.MethodHead
	if need != "" && !s.has(p, need) {
		return forbidden("%s %s needs the %s role; %s has %s", r.Method, r.URL.Path, need, p.Name, rolesText(s.roles.of(p)))
	}
	if change && s.stopping() {
		return &apiError{body: apiErrUnavailable("the server is stopping", "retry on another server, or once it is back")}
	}
	if change && p.Via == ViaProxy {
		if !jsonContent(r) {
			return forbidden("a change authenticated by the proxy's header must be sent as Content-Type: application/json")
		}
		if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r) {
			return forbidden("Origin %q is not this server's", o)
		}
	}
	return nil
}

// has reports whether p holds a role.
func (s *Server) has(p *Principal, role string) bool {
	for _, r := range s.roles.of(p) {
		if r == role {
			return true
		}
	}
	return false
}

func rolesText(rs []string) string {
	if len(rs) == 0 {
		return "no role"
	}
	return fmt.Sprintf("%v", rs)
}
