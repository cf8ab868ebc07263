package apitest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const run = `{"runId":"01JD3F0000000000000000000A","agent":"oncall","status":"suspended","input":"nginx is down","output":"","error":"",
"pending":[{"callId":"call_1","runId":"01JD3F0000000000000000000A","path":["oncall"],"tool":"restart","args":{"service":"nginx"},"kind":"approval",
"gate":{"verdict":"required","reasons":[{"kind":"tool"}]},"deadline":"2026-12-01T10:00:00Z","approvalsNeeded":2,"approvals":1}],
"createdAt":"2026-12-01T10:00:00Z","updatedAt":"2026-12-01T10:00:01Z","rootId":"01JD3F0000000000000000000A","path":["oncall"],
"usage":{"modelCalls":1,"inputTokens":11,"outputTokens":7},"startedBy":"alice"`

const detail = run + `,"calls":[{"callId":"call_1","tool":"restart","args":{"service":"nginx"},"status":"pending","result":"","createdAt":"2026-12-01T10:00:00Z","updatedAt":"2026-12-01T10:00:00Z"}],
"decisions":[{"runId":"01JD3F0000000000000000000A","path":["oncall"],"callId":"call_1","action":"approve","by":"bob","osUser":"bob","reason":"","at":"2026-12-01T10:00:02Z"}],"grants":[]`

// respond records a response to a request of method and target.
func respond(method, target string, code int, contentType, body string) (*http.Request, *http.Response, []byte) {
	req := httptest.NewRequest(method, "http://agentctl.test"+target, nil)
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", contentType)
	rec.WriteHeader(code)
	rec.WriteString(body)
	return req, rec.Result(), rec.Body.Bytes()
}

func TestCheck(t *testing.T) {
	c := New(t)
	const js = "application/json"
	for _, tc := range []struct {
		name, method, target string
		code                 int
		ct, body             string
		bad                  string // a word of the problem; "": none
	}{
		{"run", "GET", "/v1/runs/01JD3F", 200, js, detail + "}", ""},
		{"tree", "GET", "/v1/runs/01JD3F?tree=true", 200, js, detail + `,"children":[` + run + `,"parentCall":"call_2","children":[]}]}`, ""},
		{"list", "GET", "/v1/runs?status=suspended&limit=1", 200, js, `{"items":[` + run + `}],"next":"01JD3F0000000000000000000A"}`, ""},
		{"approve 202", "POST", "/v1/runs/01JD3F/approve?wait=0", 202, js, detail + "}", ""},
		{"start", "POST", "/v1/runs", 201, "application/json; charset=utf-8", detail + "}", ""},
		{"inbox", "GET", "/v1/approvals", 200, js, `{"items":[{"runId":"A","rootId":"A","callId":"call_1","agent":"oncall","path":["oncall"],"tool":"restart",
			"args":{},"kind":"approval","approvers":["alice","group:sre"],"approvalsNeeded":1,"approvalsGiven":0,"createdAt":"2026-12-01T10:00:00Z"}]}`, ""},
		{"whoami", "GET", "/v1/whoami", 200, js, `{"user":"alice","groups":[],"via":"token","roles":["approver"]}`, ""},
		{"not found", "GET", "/v1/runs/01JD3F", 404, js, `{"error":{"code":"not_found","message":"no run 01JD3F"}}`, ""},
		{"conflict", "POST", "/v1/runs/01JD3F/approve", 409, js, `{"error":{"code":"conflict","message":"call_1 was approved by bob","hint":"agentctl show 01JD3F"}}`, ""},
		{"invalid", "POST", "/v1/runs", 400, js, `{"error":{"code":"invalid","message":"bad","details":[{"pointer":"/agent","message":"required"}]}}`, ""},
		{"healthz", "GET", "/healthz", 200, js, `{"status":"ok"}`, ""},
		{"readyz", "GET", "/readyz", 503, js, `{"status":"stopping"}`, ""},
		{"metrics", "GET", "/metrics", 200, "text/plain; version=0.0.4; charset=utf-8", "agentctl_store_up 1\n", ""},
		{"events", "GET", "/v1/runs/01JD3F/events", 200, "text/event-stream",
			"id: 1\nevent: finish\ndata: {\"type\":\"finish\",\"runId\":\"A\",\"path\":[\"a\"],\"output\":\"x\"}\n\n: keep-alive\n\n", ""},

		{"an extra field", "GET", "/v1/runs/01JD3F", 200, js, detail + `,"runID":"x"}`, "runID"},
		{"a wrong error code", "GET", "/v1/runs/01JD3F", 404, js, `{"error":{"code":"conflict","message":"x"}}`, "not_found"},
		{"an undocumented status", "GET", "/v1/runs/01JD3F", 418, js, `{}`, "418"},
		{"a wrong content type", "GET", "/v1/whoami", 200, "text/plain", `{"user":"alice","groups":[],"via":"token","roles":[]}`, "text/plain"},
		{"an event without its run", "GET", "/v1/events", 200, "text/event-stream", "id: 1\nevent: finish\ndata: {\"type\":\"finish\"}\n\n", "runId"},
	} {
		req, resp, body := respond(tc.method, tc.target, tc.code, tc.ct, tc.body)
		problems := c.Problems(req, resp, body)
		all := strings.Join(problems, "\n")
		switch {
		case tc.bad == "" && len(problems) > 0:
			t.Errorf("%s: %s", tc.name, all)
		case tc.bad != "" && !strings.Contains(all, tc.bad):
			t.Errorf("%s: want a problem naming %q, got %q", tc.name, tc.bad, all)
		}
	}
}
