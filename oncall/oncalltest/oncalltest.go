// Package oncalltest is a stand-in of PagerDuty's and Opsgenie's on-call
// APIs for tests: it answers GET /oncalls and GET
// /v2/schedules/{name}/on-calls in the shapes their documentation gives,
// and refuses a request that lacks a documented field agentctl sends.
package oncalltest

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync"
)

// PagerDutyOnCall is one on-call entry of a PagerDuty schedule.
type PagerDutyOnCall struct {
	Level int    `json:"level"`
	ID    string `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
}

// Config is what the stand-in knows: the credentials it accepts and who
// is on call on each schedule.
type Config struct {
	Token     string                       `json:"token"`     // PagerDuty's REST API key
	Key       string                       `json:"key"`       // Opsgenie's API key
	PagerDuty map[string][]PagerDutyOnCall `json:"pagerduty"` // by schedule ID
	Opsgenie  map[string][]string          `json:"opsgenie"`  // by schedule name: user names
}

// Request is one request the stand-in answered, without its credentials.
type Request struct {
	Path   string `json:"path"`
	Query  string `json:"query"`
	Auth   string `json:"auth"` // "ok", "bad" or "none"
	Status int    `json:"status"`
}

// Server is the stand-in; Handler serves it.
type Server struct {
	cfg Config
	mu  sync.Mutex
	log []Request
	// OnRequest, when set, is told of each request before it is answered.
	OnRequest func(Request)
}

// New returns a stand-in serving cfg.
func New(cfg Config) *Server { return &Server{cfg: cfg} }

// Requests returns the requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// Handler answers both APIs.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /oncalls", s.pagerduty)
	mux.HandleFunc("GET /v2/schedules/{id}/on-calls", s.opsgenie)
	return mux
}

func (s *Server) record(r *http.Request, auth string, status int) {
	rq := Request{Path: r.URL.Path, Query: r.URL.RawQuery, Auth: auth, Status: status}
	s.mu.Lock()
	s.log = append(s.log, rq)
	s.mu.Unlock()
	if s.OnRequest != nil {
		s.OnRequest(rq)
	}
}

func authOf(got, want string) string {
	switch {
	case got == "":
		return "none"
	case got == want:
		return "ok"
	}
	return "bad"
}

// pagerduty answers GET /oncalls as PagerDuty's "List all of the
// on-calls" documents it.
func (s *Server) pagerduty(w http.ResponseWriter, r *http.Request) {
	auth := authOf(r.Header.Get("Authorization"), "Token token="+s.cfg.Token)
	q := r.URL.Query()
	switch {
	case auth != "ok":
		s.answer(w, r, auth, http.StatusUnauthorized, map[string]any{"error": map[string]any{"message": "Unauthorized", "code": 2006}})
		return
	case r.Header.Get("Accept") != "application/vnd.pagerduty+json;version=2" || len(q["schedule_ids[]"]) == 0:
		s.answer(w, r, auth, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": "Invalid Input Provided", "code": 2001}})
		return
	}
	users := slices.Contains(q["include[]"], "users")
	oncalls := []any{}
	for _, id := range q["schedule_ids[]"] {
		for _, oc := range s.cfg.PagerDuty[id] {
			user := map[string]any{"id": oc.ID, "type": "user_reference", "summary": oc.Name,
				"self": "https://api.pagerduty.com/users/" + oc.ID, "html_url": "https://subdomain.pagerduty.com/users/" + oc.ID}
			if users {
				user["type"], user["name"], user["email"] = "user", oc.Name, oc.Email
			}
			oncalls = append(oncalls, map[string]any{
				"escalation_policy": map[string]any{"id": "PT20YPA", "type": "escalation_policy_reference", "summary": "Engineering Escalation Policy"},
				"escalation_level":  oc.Level,
				"schedule":          map[string]any{"id": id, "type": "schedule_reference", "summary": "Daily Engineering Rotation"},
				"user":              user,
				"start":             "2015-03-06T15:28:51-05:00",
				"end":               "2015-03-07T15:28:51-05:00",
			})
		}
	}
	s.answer(w, r, auth, http.StatusOK, map[string]any{"oncalls": oncalls, "limit": 25, "offset": 0, "more": false, "total": nil})
}

// opsgenie answers GET /v2/schedules/{id}/on-calls as Opsgenie's Who is
// On Call API documents it (flat=true: the recipients' user names).
func (s *Server) opsgenie(w http.ResponseWriter, r *http.Request) {
	auth := authOf(r.Header.Get("Authorization"), "GenieKey "+s.cfg.Key)
	q := r.URL.Query()
	name := r.PathValue("id")
	recipients, ok := s.cfg.Opsgenie[name]
	switch {
	case auth != "ok":
		s.answer(w, r, auth, http.StatusUnauthorized, map[string]any{"message": "Could not authenticate", "took": 0.0, "requestId": "rq-1"})
		return
	case q.Get("scheduleIdentifierType") != "name" || q.Get("flat") != "true":
		s.answer(w, r, auth, http.StatusUnprocessableEntity, map[string]any{"message": "agentctl sends scheduleIdentifierType=name&flat=true", "took": 0.0, "requestId": "rq-1"})
		return
	case !ok:
		s.answer(w, r, auth, http.StatusNotFound, map[string]any{"message": "Schedule with identifier [" + name + "] does not exist", "took": 0.0, "requestId": "rq-1"})
		return
	}
	if recipients == nil {
		recipients = []string{}
	}
	s.answer(w, r, auth, http.StatusOK, map[string]any{
		"data": map[string]any{"_parent": map[string]any{"id": "d875alp4-9b4e-4219-alp3-0c26936d18de", "name": name, "enabled": true},
			"onCallRecipients": recipients},
		"took": 0.102, "requestId": "rq-1"})
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, auth string, status int, body any) {
	s.record(r, auth, status)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}
