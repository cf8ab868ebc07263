package notify

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// sampleApproval is a full approval notification.
func sampleApproval() *Message {
	deadline := time.Date(2025, 1, 2, 16, 4, 5, 0, time.UTC)
	return &Message{
		ID:   "ntf_01JABC",
		Type: Approval,
		At:   time.Date(2025, 1, 2, 15, 4, 5, 123000000, time.FixedZone("CET", 3600)),
		Run:  Run{ID: "01JRUN", RootID: "01JROOT", Agent: "ops", Path: []string{"oncall", "ops"}, Status: "suspended"},
		Call: &Call{
			ID: "call_1", Tool: "restart_service", Args: json.RawMessage(`{ "env": "prod", "service": "nginx" }`),
			Kind: "approval", Why: "the tool's requireApproval is true",
			Approvers:       []string{"alice", "group:sre"},
			ApprovalsNeeded: 2, ApprovalsGiven: 1, Deadline: &deadline,
		},
		URL:     "https://agentctl.example/inbox/01JRUN?call=call_1&x=<1>",
		Command: "agentctl approve 01JRUN --call call_1",
	}
}

func TestBodyApproval(t *testing.T) {
	got := string(sampleApproval().Body())
	want := `{"type":"call.approval","timestamp":"2025-01-02T14:04:05.123Z","data":{"id":"ntf_01JABC",` +
		`"run":{"id":"01JRUN","rootId":"01JROOT","agent":"ops","path":["oncall","ops"],"status":"suspended"},` +
		`"call":{"id":"call_1","tool":"restart_service","args":{"env":"prod","service":"nginx"},"kind":"approval",` +
		`"why":"the tool's requireApproval is true","approvers":["alice","group:sre"],"approvalsNeeded":2,"approvalsGiven":1,` +
		`"deadline":"2025-01-02T16:04:05Z"},` +
		`"url":"https://agentctl.example/inbox/01JRUN?call=call_1&x=<1>","command":"agentctl approve 01JRUN --call call_1"}}`
	if got != want {
		t.Errorf("Body:\n got %s\nwant %s", got, want)
	}
	if again := string(sampleApproval().Body()); again != got {
		t.Errorf("Body is not deterministic:\n%s\n%s", got, again)
	}
}

func TestBodyShapes(t *testing.T) {
	at := time.Unix(1614265330, 0)
	tests := []struct {
		name string
		m    *Message
		want string
	}{
		{"completed", &Message{ID: "n1", Type: Completed, At: at, Run: Run{ID: "r", Agent: "a", Status: "completed"}, Output: "done <ok> & fine"},
			`{"type":"run.completed","timestamp":"2021-02-25T15:02:10Z","data":{"id":"n1","run":{"id":"r","rootId":"","agent":"a","path":[],"status":"completed"},"output":"done <ok> & fine"}}`},
		{"failed", &Message{ID: "n2", Type: Failed, At: at, Run: Run{ID: "r", Status: "failed"}, Error: "boom"},
			`{"type":"run.failed","timestamp":"2021-02-25T15:02:10Z","data":{"id":"n2","run":{"id":"r","rootId":"","agent":"","path":[],"status":"failed"},"error":"boom"}}`},
		{"suspend, bare call", &Message{ID: "n3", Type: Suspend, At: at, Call: &Call{ID: "c", Payload: json.RawMessage(`{"q": 1}`), ResumeSchema: json.RawMessage(`{"type":"object"}`)}},
			`{"type":"call.suspend","timestamp":"2021-02-25T15:02:10Z","data":{"id":"n3","run":{"id":"","rootId":"","agent":"","path":[],"status":""},"call":{"id":"c","tool":"","args":null,"kind":"","why":"","approvers":[],"approvalsNeeded":0,"approvalsGiven":0,"payload":{"q":1},"resumeSchema":{"type":"object"}}}}`},
		{"bad raw JSON", &Message{Type: Expired, Call: &Call{Args: json.RawMessage(`{not json`)}},
			`{"type":"call.expired","timestamp":"0001-01-01T00:00:00Z","data":{"id":"","run":{"id":"","rootId":"","agent":"","path":[],"status":""},"call":{"id":"","tool":"","args":"{not json","kind":"","why":"","approvers":[],"approvalsNeeded":0,"approvalsGiven":0}}}`},
		{"unknown type", &Message{Type: "odd"},
			`{"type":"unknown","timestamp":"0001-01-01T00:00:00Z","data":{"id":"","run":{"id":"","rootId":"","agent":"","path":[],"status":""}}}`},
		{"nil", nil,
			`{"type":"unknown","timestamp":"0001-01-01T00:00:00Z","data":{"id":"","run":{"id":"","rootId":"","agent":"","path":[],"status":""}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(tt.m.Body()); got != tt.want {
				t.Errorf("Body:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestEvent(t *testing.T) {
	for ty, want := range map[Type]string{
		Approval: "call.approval", Suspend: "call.suspend", Expired: "call.expired",
		Completed: "run.completed", Failed: "run.failed", "": "unknown", "x.y": "unknown",
	} {
		if got := ty.Event(); got != want {
			t.Errorf("%q.Event() = %q, want %q", ty, got, want)
		}
	}
}

func TestSummary(t *testing.T) {
	long := strings.Repeat("x", 1000)
	tests := []struct {
		m    *Message
		want string
	}{
		{sampleApproval(), "approval needed: restart_service in run 01JRUN (oncall/ops)"},
		{&Message{Type: Suspend, Run: Run{ID: "r", Agent: "a"}, Call: &Call{Tool: "ask"}}, "resume data needed: ask in run r (a)"},
		{&Message{Type: Expired, Run: Run{ID: "r"}}, "expired: ? in run r passed its deadline and was declined"},
		{&Message{Type: Completed, Run: Run{ID: "r", Agent: "a"}}, "run r (a) completed"},
		{&Message{Type: Failed, Run: Run{ID: "r", Agent: "a"}, Error: "\n\n  model timed out\n\tat line 2"}, "run r (a) failed: model timed out"},
		{&Message{Type: Failed, Run: Run{ID: "r\nX", Agent: "a\x00b"}}, "run r X (a b) failed"},
		{&Message{Type: "odd", Run: Run{ID: "r"}}, "odd notification about run r"},
		{nil, "notification"},
		{&Message{Type: Completed, Run: Run{ID: long}}, "run " + strings.Repeat("x", 39) + "… completed"},
	}
	for _, tt := range tests {
		if got := tt.m.Summary(); got != tt.want {
			t.Errorf("Summary() = %q, want %q", got, tt.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"  a \n\t b  ", 10, "a b"},
		{"abcdef", 3, "ab…"},
		{"abc", 3, "abc"},
		{"a\xffb", 10, "a\uFFFDb"},
		{"a\u202eb\u200bc", 10, "a b c"},
		{"xyz", 0, "…"},
	}
	for _, tt := range tests {
		if got := oneLine(tt.in, tt.n); got != tt.want {
			t.Errorf("oneLine(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// oddStrings are inputs renderers must survive.
var oddStrings = []string{
	"", "\xff\xfe\xfd", "a\x00b", "<script>alert(1)</script>&amp;", "```", "`\n```\n`",
	"line1\r\nline2\rline3", "\u202e\u2066rtl", "😀👍🏽", strings.Repeat("é", 5000),
	"<!channel> <@U123> <https://evil.example|click>", `"},{"type":"x"`, "\\u0000",
}

// FuzzRender checks that Body, Summary and SlackBody never panic, and
// always give valid JSON and Slack-sized blocks, whatever the message
// holds.
func FuzzRender(f *testing.F) {
	for i, s := range oddStrings {
		f.Add(s, oddStrings[(i+3)%len(oddStrings)], []byte(s), uint8(i))
	}
	f.Add("big", "args", bytes.Repeat([]byte(`{"a":"<&>`+"`"+`"},`), 3000), uint8(1))
	f.Add("x", "y", []byte(`{"a": [1, 2, {"b": "`+strings.Repeat("z", 20000)+`"}]}`), uint8(2))
	f.Fuzz(func(t *testing.T, s, s2 string, raw []byte, kind uint8) {
		types := []Type{Approval, Suspend, Expired, Completed, Failed, Type(s)}
		deadline := time.Unix(int64(kind)*1e9, 0)
		m := &Message{
			ID: s, Type: types[int(kind)%len(types)], At: deadline,
			Run:    Run{ID: s, RootID: s2, Agent: s2, Path: []string{s, s2}, Status: s},
			Call:   &Call{ID: s2, Tool: s, Args: raw, Kind: s2, Why: s, Approvers: []string{s, s2}, Deadline: &deadline, Payload: raw, ResumeSchema: raw},
			Output: s2 + string(raw), Error: s, URL: "https://x.example/" + s, Command: s2,
		}
		if kind%3 == 0 {
			m.Call = nil
		}
		checkRendered(t, m)
	})
}

func checkRendered(t *testing.T, m *Message) {
	t.Helper()
	body := m.Body()
	if !json.Valid(body) || bytes.ContainsRune(body, '\n') {
		t.Fatalf("Body is not one line of valid JSON: %q", body)
	}
	sum := m.Summary()
	if !utf8.ValidString(sum) || utf8.RuneCountInString(sum) > 400 {
		t.Fatalf("Summary is not short valid UTF-8: %q", sum)
	}
	for _, r := range sum {
		if !unicode.IsPrint(r) {
			t.Fatalf("Summary holds %U: %q", r, sum)
		}
	}
	checkSlack(t, SlackBody(m))
}
