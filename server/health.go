package server

import (
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine/store"
)

func apiErr404(msg string) api.Error { return api.Error{Code: api.CodeNotFound, Message: msg} }

func apiErrUnavailable(msg, hint string) api.Error {
	return api.Error{Code: api.CodeUnavailable, Message: msg, Hint: hint}
}

// jsonContent reports whether a request says its body is JSON.
func jsonContent(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// sameOrigin reports whether an Origin header names the host the request
// was sent to.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// healthz answers 200 while the process runs.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 when the store answers, the specs are loaded, every
// loop that waits on the database works (Options.Loops) and the server
// is not stopping; else 503, and status says why (the loops by name).
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	why := ""
	switch {
	case s.stopping():
		why = "stopping"
	case !s.specs.Ready():
		why = "specs not loaded"
	default:
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if _, err := s.store.List(ctx, store.Filter{Limit: 1}); err != nil {
			why = "store unavailable"
		} else if p := s.loopProblems(); p != "" {
			why = "degraded: " + p
		}
	}
	if why != "" {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": why})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// loopProblems names the server's loops that fail. Why they fail is in
// the log: /readyz answers anyone, and the cause names the database.
func (s *Server) loopProblems() string {
	if s.opts.Loops == nil {
		return ""
	}
	var out []string
	for _, p := range s.opts.Loops.Problems() {
		out = append(out, p.Loop)
	}
	return strings.Join(out, ", ")
}

// metrics serves the Metrics hook, or 404.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.opts.Metrics == nil {
		s.writeError(w, r, &apiError{body: apiErr404("no metrics on this server"), status: http.StatusNotFound})
		return
	}
	s.opts.Metrics.ServeHTTP(w, r)
}

// openapi serves the OpenAPI document.
func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(s.opts.OpenAPI)
}

// whoami answers who the caller is to the server.
func (s *Server) whoami(w http.ResponseWriter, _ *http.Request, p *Principal) error {
	out := api.Whoami{User: p.Name, Groups: slices.Clone(p.Groups), Via: p.Via, Roles: s.roles.of(p)}
	if out.Groups == nil {
		out.Groups = []string{}
	}
	if out.Roles == nil {
		out.Roles = []string{}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// events serves an event stream through the Events hook.
func (s *Server) events(w http.ResponseWriter, r *http.Request, f store.FeedFilter) error {
	ctx, cancel := s.whileValid(r.Context(), infoOf(r).principal)
	defer cancel()
	s.opts.Events(w, r.WithContext(ctx), f)
	return nil
}

// runEvents is GET /v1/runs/{id}/events: a root run's tree's events, a
// sub-run's own.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request, p *Principal) error {
	id, err := s.resolveID(r, p, false) // the run is read below
	if err != nil {
		return err
	}
	run, err := s.store.Run(r.Context(), id)
	if err != nil {
		return err
	}
	if run.ParentID == "" { // a root: its tree's events, as agentctl events prints them
		return s.events(w, r, store.FeedFilter{Root: id})
	}
	return s.events(w, r, store.FeedFilter{RunID: id})
}

// allEvents is GET /v1/events.
func (s *Server) allEvents(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	return s.events(w, r, store.FeedFilter{})
}

// jsonOf encodes v.
func jsonOf(v any) (json.RawMessage, error) { return json.Marshal(v) }
