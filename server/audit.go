package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

// audit is GET /v1/audit: the decisions across runs, in the order they
// were made, as agentctl audit -o json prints them, a page at a time.
func (s *Server) audit(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	as, ok := s.store.(store.AuditStore)
	if !ok {
		return &apiError{body: apiErrUnavailable("this server's store keeps no audit trail", "")}
	}
	f, err := auditFilterOf(r)
	if err != nil {
		return err
	}
	n, err := limitOf(r)
	if err != nil {
		return err
	}
	f.Limit, f.After = n+1, r.URL.Query().Get("cursor") // one more: is there a next page?
	ds, err := as.Audit(r.Context(), f)
	if errors.Is(err, store.ErrBadCursor) {
		return invalid(fmt.Sprintf("cursor %q: not a cursor of this list: give the previous page's next", f.After),
			api.Detail{Pointer: "/cursor", Message: "not a cursor"})
	}
	if err != nil {
		return err
	}
	out := api.List[api.AuditEntry]{}
	if len(ds) > n {
		ds, out.Next = ds[:n], ds[n-1].Cursor
	}
	out.Items = api.AuditEntries(ds)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// auditFilterOf reads the audit's query: since and until (RFC 3339),
// agent and rootOnly.
func auditFilterOf(r *http.Request) (store.AuditFilter, error) {
	q := r.URL.Query()
	f := store.AuditFilter{Agent: q.Get("agent")}
	for _, b := range []struct {
		name string
		to   *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		v := q.Get(b.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return f, invalid(fmt.Sprintf("%s %q: want a time in RFC 3339 (2026-11-01T09:00:00Z)", b.name, v),
				api.Detail{Pointer: "/" + b.name, Message: "not an RFC 3339 time"})
		}
		*b.to = t
	}
	if v := q.Get("rootOnly"); v != "" {
		var err error
		if f.RootOnly, err = strconv.ParseBool(v); err != nil {
			return f, invalid(fmt.Sprintf("rootOnly %q: want true or false", v), api.Detail{Pointer: "/rootOnly", Message: "not a boolean"})
		}
	}
	if f.RootOnly && f.Agent == "" {
		return f, invalid("rootOnly keeps agent to the agent's own runs: name one", api.Detail{Pointer: "/agent", Message: "required with rootOnly"})
	}
	return f, nil
}

// status is GET /v1/status: what agentctl status -o json prints, the
// database named by its kind only.
func (s *Server) status(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	q, err := s.store.Queue(r.Context())
	if err != nil {
		return err
	}
	kind := "unknown"
	if d, ok := s.store.(interface{ Dialect() string }); ok {
		kind = d.Dialect()
	}
	writeJSON(w, http.StatusOK, StatusOf(kind, q, s.now()))
	return nil
}

// StatusOf is the status of a store's queue at now, as agentctl status
// prints it: a worker of this host whose process is gone is dead.
func StatusOf(database string, q *store.QueueStatus, now time.Time) api.Status {
	v := api.Status{Database: database, Workers: []api.StatusWorker{}, Leases: q.Leases, Queued: q.Queued, Pending: q.Pending, Overdue: q.Overdue}
	if !q.OldestPending.IsZero() {
		oldest, age := q.OldestPending, now.Sub(q.OldestPending).Seconds()
		v.OldestPending, v.OldestPendingAge = &oldest, &age
	}
	for _, w := range q.Workers {
		wv := api.StatusWorker{Worker: w, Dead: engine.HolderDead(w.ID)}
		wv.Alive = w.Alive(now) && !wv.Dead
		v.Workers = append(v.Workers, wv)
	}
	return v
}
