// Package oncall reads who is on call now from an on-call schedule:
// PagerDuty's REST API v2 (GET /oncalls) and Opsgenie's Who is On Call
// API (GET /v2/schedules/{identifier}/on-calls). It sends only the
// documented request fields, reads only the documented response fields,
// and never puts a token or key in an error.
package oncall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Default API URLs.
const (
	PagerDutyURL = "https://api.pagerduty.com"
	OpsgenieURL  = "https://api.opsgenie.com"
)

// maxBody bounds how much of a response is read.
const maxBody = 1 << 20

// ErrNobody is returned when a schedule names nobody on call now.
var ErrNobody = errors.New("nobody is on call")

// StatusError is a response other than 200 OK.
type StatusError struct {
	Service string // "pagerduty" or "opsgenie"
	Code    int    // the HTTP status code
}

func (e *StatusError) Error() string {
	why := ""
	switch e.Code {
	case http.StatusUnauthorized:
		why = ": the token or key was refused"
	case http.StatusForbidden:
		why = ": the token or key may not read the schedule"
	case http.StatusNotFound:
		why = ": no such schedule"
	}
	return fmt.Sprintf("%s answered %d %s%s", e.Service, e.Code, http.StatusText(e.Code), why)
}

// Person is one user on call, as the schedule names them; fields the
// service did not give are empty.
type Person struct {
	ID    string `json:"id,omitempty"`
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
}

// Keys are the names a spec's users: map may give the person by, most
// specific first: email, then id, then name.
func (p Person) Keys() []string {
	var out []string
	for _, k := range []string{p.Email, p.ID, p.Name} {
		if k != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// PagerDuty asks for one schedule's on-calls now.
type PagerDuty struct {
	APIURL   string // "": PagerDutyURL
	Token    string // a REST API key
	Schedule string // the schedule's ID
	Level    int    // only on-calls at this escalation level; 0: any
}

// OnCall returns who is on call on the schedule now: GET
// {APIURL}/oncalls?schedule_ids[]=ID&include[]=users with the headers
// Authorization: Token token=... and Accept:
// application/vnd.pagerduty+json;version=2. It reads oncalls[].user
// (id, summary, email) and oncalls[].escalation_level.
func (q PagerDuty) OnCall(ctx context.Context, hc *http.Client) ([]Person, error) {
	v := url.Values{"schedule_ids[]": {q.Schedule}, "include[]": {"users"}}
	u := strings.TrimSuffix(orDefault(q.APIURL, PagerDutyURL), "/") + "/oncalls?" + v.Encode()
	var body struct {
		OnCalls []struct {
			EscalationLevel int `json:"escalation_level"`
			User            struct {
				ID      string `json:"id"`
				Summary string `json:"summary"`
				Name    string `json:"name"`
				Email   string `json:"email"`
			} `json:"user"`
		} `json:"oncalls"`
	}
	h := http.Header{"Authorization": {"Token token=" + q.Token}, "Accept": {"application/vnd.pagerduty+json;version=2"}}
	if err := get(ctx, hc, "pagerduty", u, h, &body); err != nil {
		return nil, err
	}
	var out []Person
	for _, oc := range body.OnCalls {
		if q.Level != 0 && oc.EscalationLevel != q.Level {
			continue
		}
		p := Person{ID: oc.User.ID, Name: orDefault(oc.User.Name, oc.User.Summary), Email: oc.User.Email}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, ErrNobody
	}
	return out, nil
}

// Opsgenie asks for one schedule's on-call participants now.
type Opsgenie struct {
	APIURL   string // "": OpsgenieURL
	Key      string // an API integration's key
	Schedule string // the schedule's name
}

// OnCall returns who is on call on the schedule now: GET
// {APIURL}/v2/schedules/{name}/on-calls?scheduleIdentifierType=name&flat=true
// with the header Authorization: GenieKey .... It reads
// data.onCallRecipients, the user names (emails) of those on call.
func (q Opsgenie) OnCall(ctx context.Context, hc *http.Client) ([]Person, error) {
	v := url.Values{"scheduleIdentifierType": {"name"}, "flat": {"true"}}
	u := strings.TrimSuffix(orDefault(q.APIURL, OpsgenieURL), "/") + "/v2/schedules/" + url.PathEscape(q.Schedule) + "/on-calls?" + v.Encode()
	var body struct {
		Data struct {
			OnCallRecipients []string `json:"onCallRecipients"`
		} `json:"data"`
	}
	if err := get(ctx, hc, "opsgenie", u, http.Header{"Authorization": {"GenieKey " + q.Key}}, &body); err != nil {
		return nil, err
	}
	var out []Person
	for _, r := range body.Data.OnCallRecipients {
		p := Person{Name: r}
		if strings.Contains(r, "@") {
			p = Person{Email: r}
		}
		if r != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, ErrNobody
	}
	return out, nil
}

// get makes one GET request and decodes its JSON answer into v. Errors
// name the service and the URL's host, never the headers.
func get(ctx context.Context, hc *http.Client, service, u string, h http.Header, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", service, err)
	}
	req.Header = h
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is the operator's; its query says nothing new
		}
		return fmt.Errorf("%s at %s: %w", service, req.URL.Host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
		return &StatusError{Service: service, Code: resp.StatusCode}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("%s at %s: %w", service, req.URL.Host, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s at %s: not the documented answer: %v (first bytes: %s)", service, req.URL.Host, err, strconv.Quote(string(b[:min(len(b), 80)])))
	}
	return nil
}

// Client returns the HTTP client on-call requests use: it follows no
// redirect (a token goes only where the spec says).
func Client() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
