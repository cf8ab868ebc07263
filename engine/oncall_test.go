package engine

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	schedules "github.com/agentctl/agentctl/oncall"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/spec/tmpl"
)

// TestWithOnCall: a policy's on-call sources become the users recorded
// on the call, else its fallback; a source that gave nobody, or that
// the call recorded nothing for, adds nobody, and never leaves the
// policy empty (anyone).
func TestWithOnCall(t *testing.T) {
	pd := &spec.OnCall{Service: spec.ServicePagerDuty, Schedule: "P1"}
	og := &spec.OnCall{Service: spec.ServiceOpsgenie, Schedule: "ops"}
	at := spec.Approvers{Users: []string{"carol"}, OnCall: []*spec.OnCall{pd, og}}
	for name, c := range map[string]struct {
		rec    []store.OnCall
		users  []string
		groups []string
		left   int // sources kept: all gave nobody
	}{
		"resolved":    {[]store.OnCall{{Source: "pagerduty/P1", Users: []string{"alice"}}, {Source: "opsgenie/ops", Users: []string{"bob"}}}, []string{"carol", "alice", "bob"}, nil, 0},
		"fallback":    {[]store.OnCall{{Source: "pagerduty/P1", Error: "down", Fallback: []string{"erin", "group:leads"}}}, []string{"carol", "erin"}, []string{"leads"}, 0},
		"no fallback": {[]store.OnCall{{Source: "pagerduty/P1", Error: "down"}}, []string{"carol"}, nil, 0},
		"unrecorded":  {nil, []string{"carol"}, nil, 0},
	} {
		ps := withOnCall([]policy{{approvers: at}}, &store.Call{Gate: store.Gate{OnCall: c.rec}})
		got := ps[0].approvers
		if !slices.Equal(got.Users, c.users) || !slices.Equal(got.Groups, c.groups) || len(got.OnCall) != c.left || got.Empty() {
			t.Errorf("%s: %+v", name, got)
		}
	}
	only := spec.Approvers{OnCall: []*spec.OnCall{pd}}
	ps := withOnCall([]policy{{approvers: only}}, &store.Call{Gate: store.Gate{OnCall: []store.OnCall{{Source: "pagerduty/P1", Error: "down"}}}})
	if ps[0].approvers.Empty() || len(decidersOf(ps, "").Approvers) != 1 || (Deciders{Approvers: []spec.Approvers{ps[0].approvers}}).Names("bob", nil) {
		t.Errorf("a schedule that gave nobody, no fallback: %+v, want nobody, not anyone", ps[0].approvers)
	}
}

// TestOnCallUsers maps those on call through users:, else by email,
// else id; an uploaded spec's (mappedOnly) through users: alone.
func TestOnCallUsers(t *testing.T) {
	e := &Engine{}
	o := &spec.OnCall{Users: map[string]string{"alice@example.com": "alice", "PBOB": "bob"}}
	people := []schedules.Person{{ID: "PALICE", Email: "alice@example.com"}, {ID: "PBOB", Name: "Bob"}, {ID: "PDAVE", Email: "dave@example.com"}, {ID: "PEVE", Name: "Eve"}}
	_, users, err := e.onCallUsers(o, people, false)
	if err != nil || !slices.Equal(users, []string{"alice", "bob", "dave@example.com", "PEVE"}) {
		t.Errorf("got %v, %v", users, err)
	}
	_, users, err = e.onCallUsers(o, people, true)
	if err != nil || !slices.Equal(users, []string{"alice", "bob"}) {
		t.Errorf("mapped only: got %v, %v", users, err)
	}
	if _, _, err := e.onCallUsers(o, people[2:], true); err == nil {
		t.Errorf("mapped only, none mapped: no error")
	}
	if _, _, err := e.onCallUsers(&spec.OnCall{}, []schedules.Person{{Name: "Bad Name!"}}, false); err == nil {
		t.Errorf("an invalid name: no error")
	}
}

// TestResolveOnCallCutsSecrets: a schedule whose answer echoes the token
// is recorded as unread, the token cut from the error, the fallback
// applied; the time is the engine's.
func TestResolveOnCallCutsSecrets(t *testing.T) {
	t.Setenv("PD_TOKEN", "pd-secret-token-4711")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "not json: "+r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	tok, err := tmpl.Parse("${{ env.PD_TOKEN }}", tmpl.Vars{"env": map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	e := &Engine{now: func() time.Time { return at }}
	o := &spec.OnCall{Service: spec.ServicePagerDuty, Schedule: "P1", Secret: tok, APIURL: srv.URL,
		Fallback: spec.Approvers{Users: []string{"erin"}, Groups: []string{"leads"}}}
	rec := e.resolveOnCall(context.Background(), o, false)
	if strings.Contains(rec.Error, "pd-secret") || !strings.Contains(rec.Error, "[env.PD_TOKEN]") || !strings.Contains(rec.Error, "not the documented answer") {
		t.Errorf("error %q: want the token cut", rec.Error)
	}
	if !slices.Equal(rec.Fallback, []string{"erin", "group:leads"}) || len(rec.Users) != 0 || !rec.At.Equal(at) || rec.Source != "pagerduty/P1" {
		t.Errorf("record %+v", rec)
	}
}
