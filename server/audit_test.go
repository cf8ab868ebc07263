package server

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// GET /v1/audit lists the decisions a page at a time, filtered as
// agentctl audit's flags; GET /v1/status is status's. Both are for
// readers (any role), and held against the OpenAPI document.
func TestAuditAndStatus(t *testing.T) {
	e := newEnv(t, testRoles)
	ralph := e.token("ralph", nil, time.Hour, false)
	rita := e.token("rita", nil, time.Hour, false)
	sam := e.token("sam", []string{"sre"}, time.Hour, false)
	nobody := e.token("nobody", nil, time.Hour, false)
	id := e.startRun(ralph)
	if r := e.do("POST", "/v1/runs/"+id+"/approve", rita, map[string]any{}); r.code != http.StatusForbidden {
		t.Fatalf("rita approves: %d %s", r.code, r.body)
	}
	if r := e.do("POST", "/v1/runs/"+id+"/approve", sam, map[string]any{"reason": "ok"}); r.code != http.StatusOK {
		t.Fatalf("sam approves: %d %s", r.code, r.body)
	}
	e.startRun(ralph) // pending

	type page struct {
		Items []struct{ RunID, Action, By, Via, Agent string }
		Next  string
	}
	get := func(path, tok string, want int) page {
		t.Helper()
		r := e.do("GET", path, tok, nil)
		if r.code != want {
			t.Fatalf("%s: %d %s", path, r.code, r.body)
		}
		var p page
		if want == http.StatusOK {
			if err := json.Unmarshal(r.body, &p); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	p := get("/v1/audit?limit=1", rita, 200)
	if len(p.Items) != 1 || p.Items[0].Action != "refused" || p.Items[0].By != "rita" || p.Items[0].Via != "token" || p.Next == "" {
		t.Fatalf("page 1: %+v", p)
	}
	p = get("/v1/audit?limit=1&cursor="+p.Next, rita, 200)
	if len(p.Items) != 1 || p.Items[0].Action != "approve" || p.Items[0].By != "sam" || p.Items[0].RunID != id || p.Next != "" {
		t.Fatalf("page 2: %+v", p)
	}
	for path, n := range map[string]int{
		"/v1/audit":                                     2,
		"/v1/audit?agent=ops&rootOnly=true":             2,
		"/v1/audit?agent=other":                         0,
		"/v1/audit?since=2000-01-01T00:00:00Z":          2,
		"/v1/audit?until=2000-01-01T00:00:00Z":          0,
		"/v1/audit?since=2999-01-01T00:00:00.5%2B02:00": 0,
	} {
		if p := get(path, ralph, 200); len(p.Items) != n { // a runner reads too
			t.Errorf("%s: %d decisions, want %d", path, len(p.Items), n)
		}
	}
	for _, path := range []string{"/v1/audit?rootOnly=true", "/v1/audit?since=30d", "/v1/audit?until=x", "/v1/audit?rootOnly=maybe&agent=ops",
		"/v1/audit?cursor=-1", "/v1/audit?cursor=x", "/v1/audit?limit=0"} {
		get(path, rita, http.StatusBadRequest)
	}
	get("/v1/audit", nobody, http.StatusForbidden)
	get("/v1/audit", "", http.StatusUnauthorized)

	r := e.do("GET", "/v1/status", rita, nil)
	var st struct {
		Database         string
		Pending, Overdue int
		Workers          []any
		OldestPending    *time.Time
	}
	if err := json.Unmarshal(r.body, &st); err != nil || r.code != 200 {
		t.Fatalf("status: %d %s", r.code, r.body)
	}
	if st.Database != "sqlite" || st.Pending != 1 || st.OldestPending == nil || st.Workers == nil {
		t.Fatalf("status: %s", r.body)
	}
	if r := e.do("GET", "/v1/status", nobody, nil); r.code != http.StatusForbidden {
		t.Fatalf("status without a role: %d %s", r.code, r.body)
	}
}
