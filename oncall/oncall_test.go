package oncall_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/oncall"
	"github.com/agentctl/agentctl/oncall/oncalltest"
)

// pdDocumented is PagerDuty's documented answer of GET /oncalls with
// include[]=users (List all of the on-calls, its response example; the
// user expanded as include[]=users gives it).
const pdDocumented = `{"oncalls":[{"escalation_policy":{"id":"PT20YPA","type":"escalation_policy_reference","summary":"Engineering Escalation Policy","self":"https://api.pagerduty.com/escalation_policies/PT20YPA","html_url":"https://subdomain.pagerduty.com/escalation_policies/PT20YPA"},
"escalation_level":2,"schedule":{"id":"PI7DH85","type":"schedule_reference","summary":"Daily Engineering Rotation","self":"https://api.pagerduty.com/schedules/PI7DH85","html_url":"https://subdomain.pagerduty.com/schedules/PI7DH85"},
"user":{"id":"PT23IWX","type":"user","summary":"Tim Wright","name":"Tim Wright","email":"tim.wright@example.com","self":"https://api.pagerduty.com/users/PT23IWX","html_url":"https://subdomain.pagerduty.com/users/PT23IWX"},
"start":"2015-03-06T15:28:51-05:00","end":"2015-03-07T15:28:51-05:00"}],"limit":25,"offset":0,"more":false,"total":null}`

// ogDocumented is Opsgenie's documented answer of Get On Calls with
// flat=true.
const ogDocumented = `{"data":{"_parent":{"id":"d875alp4-9b4e-4219-alp3-0c26936d18de","name":"ScheduleName","enabled":true},"onCallRecipients":["user4@opsgenie.com"]},"took":0.102,"requestId":"bf1f4f43-b8f3-4b95-a0ef-e6ee1fe4f5a9"}`

// recorded serves body to any request and keeps the last request.
func recorded(t *testing.T, status int, body string, last **http.Request) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*last = r
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestPagerDutyDocumented sends the documented request and reads the
// documented answer.
func TestPagerDutyDocumented(t *testing.T) {
	var r *http.Request
	u := recorded(t, 200, pdDocumented, &r)
	got, err := oncall.PagerDuty{APIURL: u, Token: "pd-secret", Schedule: "PI7DH85"}.OnCall(context.Background(), oncall.Client())
	if err != nil {
		t.Fatal(err)
	}
	want := []oncall.Person{{ID: "PT23IWX", Name: "Tim Wright", Email: "tim.wright@example.com"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if r.URL.Path != "/oncalls" || r.URL.Query()["schedule_ids[]"][0] != "PI7DH85" || r.URL.Query()["include[]"][0] != "users" {
		t.Errorf("request %s", r.URL)
	}
	if r.Header.Get("Authorization") != "Token token=pd-secret" || r.Header.Get("Accept") != "application/vnd.pagerduty+json;version=2" {
		t.Errorf("headers %v", r.Header)
	}
	// The documented entry is at level 2: a level-1 query finds nobody.
	_, err = oncall.PagerDuty{APIURL: u, Token: "pd-secret", Schedule: "PI7DH85", Level: 1}.OnCall(context.Background(), oncall.Client())
	if !errors.Is(err, oncall.ErrNobody) {
		t.Errorf("level 1: %v, want ErrNobody", err)
	}
}

// TestOpsgenieDocumented sends the documented request and reads the
// documented answer.
func TestOpsgenieDocumented(t *testing.T) {
	var r *http.Request
	u := recorded(t, 200, ogDocumented, &r)
	got, err := oncall.Opsgenie{APIURL: u, Key: "og-secret", Schedule: "ops primary"}.OnCall(context.Background(), oncall.Client())
	if err != nil {
		t.Fatal(err)
	}
	if want := []oncall.Person{{Email: "user4@opsgenie.com"}}; !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if r.URL.EscapedPath() != "/v2/schedules/ops%20primary/on-calls" || r.URL.Query().Get("scheduleIdentifierType") != "name" || r.URL.Query().Get("flat") != "true" {
		t.Errorf("request %s", r.URL)
	}
	if r.Header.Get("Authorization") != "GenieKey og-secret" {
		t.Errorf("headers %v", r.Header)
	}
}

// TestStandIn checks the clients against the stand-in the scenarios use.
func TestStandIn(t *testing.T) {
	st := oncalltest.New(oncalltest.Config{Token: "pd", Key: "og",
		PagerDuty: map[string][]oncalltest.PagerDutyOnCall{"PABC123": {{Level: 1, ID: "PA", Name: "Alice", Email: "alice@example.com"}, {Level: 2, ID: "PB", Name: "Bob"}}},
		Opsgenie:  map[string][]string{"ops-primary": {"carol@example.com"}, "empty": nil}})
	srv := httptest.NewServer(st.Handler())
	defer srv.Close()
	ctx, hc := context.Background(), oncall.Client()
	got, err := oncall.PagerDuty{APIURL: srv.URL, Token: "pd", Schedule: "PABC123", Level: 1}.OnCall(ctx, hc)
	if err != nil || len(got) != 1 || got[0].Email != "alice@example.com" {
		t.Errorf("pagerduty: %+v, %v", got, err)
	}
	got, err = oncall.Opsgenie{APIURL: srv.URL, Key: "og", Schedule: "ops-primary"}.OnCall(ctx, hc)
	if err != nil || len(got) != 1 || got[0].Email != "carol@example.com" {
		t.Errorf("opsgenie: %+v, %v", got, err)
	}
	if _, err := (oncall.Opsgenie{APIURL: srv.URL, Key: "og", Schedule: "empty"}).OnCall(ctx, hc); !errors.Is(err, oncall.ErrNobody) {
		t.Errorf("empty schedule: %v", err)
	}
}

// TestFailures: a refused token, a server that is down and one too slow
// each fail with an error that names the service and never the token.
func TestFailures(t *testing.T) {
	var r *http.Request
	refused := recorded(t, 401, `{"error":{"message":"Unauthorized","code":2006}}`, &r)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	ctx, hc := context.Background(), oncall.Client()
	for name, c := range map[string]struct {
		url  string
		want string
	}{
		"401":  {refused, "pagerduty answered 401 Unauthorized: the token or key was refused"},
		"down": {down.URL, "connection refused"},
		"slow": {slow.URL, "deadline exceeded"},
	} {
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err := oncall.PagerDuty{APIURL: c.url, Token: "pd-secret", Schedule: "P1"}.OnCall(cctx, hc)
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "pd-secret") {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	var se *oncall.StatusError
	if _, err := (oncall.Opsgenie{APIURL: refused, Key: "k", Schedule: "s"}).OnCall(ctx, hc); !errors.As(err, &se) || se.Code != 401 {
		t.Errorf("opsgenie 401: %v", err)
	}
}
