package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

type slackDoc struct {
	Text   string `json:"text"`
	Blocks []struct {
		Type     string      `json:"type"`
		Text     *slackText  `json:"text"`
		Fields   []slackText `json:"fields"`
		Elements []slackText `json:"elements"`
	} `json:"blocks"`
}

func units(s string) int { return len(utf16.Encode([]rune(s))) }

// checkSlack checks that body is a Slack message within Slack's limits,
// and returns it decoded.
func checkSlack(t *testing.T, body []byte) slackDoc {
	t.Helper()
	var doc slackDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("Slack body is not JSON: %v\n%s", err, body)
	}
	if doc.Text == "" || units(doc.Text) > 3000 {
		t.Fatalf("Slack text is empty or too long (%d)", units(doc.Text))
	}
	if len(doc.Blocks) == 0 || len(doc.Blocks) > 50 || doc.Blocks[0].Type != "header" {
		t.Fatalf("Slack blocks: %d, first %+v", len(doc.Blocks), doc.Blocks)
	}
	for i, b := range doc.Blocks {
		switch b.Type {
		case "header":
			if b.Text == nil || b.Text.Type != "plain_text" || b.Text.Text == "" || units(b.Text.Text) > 150 {
				t.Fatalf("block %d: bad header %+v", i, b.Text)
			}
		case "section":
			if b.Text == nil && len(b.Fields) == 0 {
				t.Fatalf("block %d: empty section", i)
			}
			if b.Text != nil && (b.Text.Text == "" || units(b.Text.Text) > 3000) {
				t.Fatalf("block %d: section text of %d characters", i, units(b.Text.Text))
			}
			if len(b.Fields) > 10 {
				t.Fatalf("block %d: %d fields", i, len(b.Fields))
			}
			for _, f := range b.Fields {
				if f.Text == "" || units(f.Text) > 2000 {
					t.Fatalf("block %d: field of %d characters", i, units(f.Text))
				}
			}
		case "context":
			if len(b.Elements) == 0 || len(b.Elements) > 10 {
				t.Fatalf("block %d: %d context elements", i, len(b.Elements))
			}
			for _, e := range b.Elements {
				if e.Text == "" || units(e.Text) > 3000 {
					t.Fatalf("block %d: context element of %d characters", i, units(e.Text))
				}
			}
		default:
			t.Fatalf("block %d: type %q", i, b.Type)
		}
	}
	return doc
}

// texts returns every text of doc, in order, one per line.
func (doc slackDoc) texts() string {
	var out []string
	for _, b := range doc.Blocks {
		if b.Text != nil {
			out = append(out, b.Text.Text)
		}
		for _, f := range append(b.Fields, b.Elements...) {
			out = append(out, f.Text)
		}
	}
	return strings.Join(out, "\n")
}

func TestSlackBodyApproval(t *testing.T) {
	doc := checkSlack(t, SlackBody(sampleApproval()))
	if doc.Text != "approval needed: restart_service in run 01JRUN (oncall/ops)" {
		t.Errorf("text = %q", doc.Text)
	}
	if h := doc.Blocks[0].Text.Text; h != "Approval needed: restart_service" {
		t.Errorf("header = %q", h)
	}
	all := doc.texts()
	for _, want := range []string{
		"*Agent*\noncall/ops", "*Run*\n`01JRUN`", "*Tool*\n`restart_service`",
		"*Why*\nthe tool's requireApproval is true", "*Who may decide*\nalice, group:sre",
		"*Approvals*\n1 of 2", "*Deadline*\n<!date^1735833845^{date_short_pretty} {time}|2025-01-02 16:04 UTC>",
		"*Arguments*\n```{\n  \"env\": \"prod\",\n  \"service\": \"nginx\"\n}```",
		"<https://agentctl.example/inbox/01JRUN?call=call_1&amp;x=%3C1%3E|Open in the inbox>",
		"Decide: `agentctl approve 01JRUN --call call_1`",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("Slack message lacks %q:\n%s", want, all)
		}
	}
}

func TestSlackBodyEscapes(t *testing.T) {
	m := sampleApproval()
	m.Call.Tool = "<script>&"
	m.Call.Why = "<!channel> <https://evil.example|click> & more"
	m.Call.Args = json.RawMessage(`{"cmd":"<b>` + "```" + `&"}`)
	m.Command = "agentctl approve `rm -rf` <x>"
	m.URL = "javascript:alert(1)"
	body := SlackBody(m)
	for _, bad := range []string{"<script>", "<!channel>", "<https://evil", "```&", "javascript:"} {
		if strings.Contains(string(body), bad) {
			t.Errorf("Slack body holds %q unescaped:\n%s", bad, body)
		}
	}
	all := checkSlack(t, body).texts()
	for _, want := range []string{
		"Approval needed: &lt;script&gt;&amp;", "`&lt;script&gt;&amp;`",
		"&lt;!channel&gt; &lt;https://evil.example|click&gt; &amp; more",
		`"cmd": "&lt;b&gt;\u0060\u0060\u0060&amp;"`, "Decide: `agentctl approve ˋrm -rfˋ &lt;x&gt;`",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("Slack message lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "Open in the inbox") {
		t.Errorf("a javascript: URL became a link:\n%s", all)
	}
}

func TestSlackBodyTruncates(t *testing.T) {
	m := sampleApproval()
	m.Call.Tool = strings.Repeat("&", 400)
	m.Call.Args = json.RawMessage(`{"a":"` + strings.Repeat("<", 100000) + `"}`)
	m.Call.Approvers = make([]string, 1000)
	for i := range m.Call.Approvers {
		m.Call.Approvers[i] = "group:everyone"
	}
	doc := checkSlack(t, SlackBody(m))
	if h := doc.Blocks[0].Text.Text; !strings.HasSuffix(h, "&amp;…") || units(h) > 150 {
		t.Errorf("header not cut at an escape: %q", h)
	}
	args := doc.Blocks[2].Text.Text
	if !strings.HasPrefix(args, "*Arguments*\n```{") || !strings.HasSuffix(args, "&lt;…```") {
		t.Errorf("arguments not cut: %q...%q", args[:40], args[len(args)-40:])
	}
}

func TestSlackBodyRuns(t *testing.T) {
	done := checkSlack(t, SlackBody(&Message{Type: Completed, Run: Run{ID: "r1", Agent: "ops", Status: "completed"}, Output: "all <good>", URL: "https://x.example/r1"}))
	if h := done.Blocks[0].Text.Text; h != "Run completed: ops" {
		t.Errorf("header = %q", h)
	}
	all := done.texts()
	for _, want := range []string{"*Status*\ncompleted", "*Output*\n```all &lt;good&gt;```", "<https://x.example/r1|Open in the inbox>"} {
		if !strings.Contains(all, want) {
			t.Errorf("lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "Decide") || strings.Contains(all, "Tool") {
		t.Errorf("a run's message has call parts:\n%s", all)
	}
	failed := checkSlack(t, SlackBody(&Message{Type: Failed, Run: Run{ID: "r2"}, Error: "model\nunreachable"}))
	if h := failed.Blocks[0].Text.Text; h != "Run failed: r2" {
		t.Errorf("header = %q", h)
	}
	if all := failed.texts(); !strings.Contains(all, "*Error*\n```model\nunreachable```") {
		t.Errorf("lacks the error:\n%s", all)
	}
	exp := checkSlack(t, SlackBody(&Message{Type: Expired, Run: Run{ID: "r3"}, Call: &Call{Tool: "t"}}))
	if all := exp.texts(); !strings.Contains(all, "passed its deadline and was declined") || strings.Contains(all, "Who may decide") {
		t.Errorf("expired message:\n%s", all)
	}
}

func TestSlackRenderOdd(t *testing.T) {
	for _, s := range oddStrings {
		m := sampleApproval()
		m.Call.Tool, m.Call.Why, m.Run.Agent, m.Command, m.Output = s, s, s, s, s
		m.Call.Args = json.RawMessage(s)
		checkRendered(t, m)
	}
	checkRendered(t, nil)
	checkRendered(t, &Message{})
}

// slackPath is a Slack webhook URL's secret path.
const slackPath = "/services/T000/B000/XXSLACKSECRETXX"

func TestSlackSend(t *testing.T) {
	tests := []struct {
		status     int
		answer     string
		retryAfter string
		permanent  bool
		wait       time.Duration
		wantText   string
	}{
		{status: 200, answer: "ok"},
		{status: 400, answer: "invalid_payload", permanent: true, wantText: "answered 400 Bad Request: invalid_payload"},
		{status: 403, answer: "action_prohibited", permanent: true},
		{status: 404, answer: "no_service", permanent: true, wantText: "no_service"},
		{status: 410, answer: "channel_is_archived", permanent: true, wantText: "channel_is_archived"},
		{status: 429, answer: "rate limited", retryAfter: "3", wait: 3 * time.Second},
		{status: 500, answer: "rollup_error " + slackPath, wantText: "answered 500 Internal Server Error: rollup_error …"},
		{status: 302, permanent: true, wantText: "redirects are not followed"},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			var got []byte
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != slackPath || r.Header.Get("Content-Type") != "application/json" {
					t.Errorf("request %s %s %q", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
				}
				got, _ = io.ReadAll(r.Body)
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				if tt.status == 302 {
					w.Header().Set("Location", "https://elsewhere.example"+slackPath)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.answer)
			}))
			defer srv.Close()
			err := Slack{URL: srv.URL + slackPath, AllowPrivate: true}.Send(context.Background(), sampleApproval())
			checkSlack(t, got)
			if tt.status == 200 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var se *SendError
			if !errors.As(err, &se) || se.Status != tt.status || se.Permanent != tt.permanent || errors.Is(err, ErrPermanent) != tt.permanent || se.RetryAfter != tt.wait {
				t.Fatalf("err = %#v", err)
			}
			msg := err.Error()
			if strings.Contains(msg, "XXSLACKSECRETXX") || strings.Contains(msg, "/services") {
				t.Errorf("error holds the URL's path: %s", msg)
			}
			if !strings.HasPrefix(msg, "slack 127.0.0.1:") || !strings.Contains(msg, tt.wantText) {
				t.Errorf("error = %q, want the host and %q", msg, tt.wantText)
			}
		})
	}
}

func TestHTMLUnescaped(t *testing.T) {
	for in, want := range map[string]string{
		`{"cmd":"a \u0026\u0026 b \u003c c \u003e d"}`: `{"cmd":"a && b < c > d"}`,
		`{"cmd":"\\u003c stays"}`:                      `{"cmd":"\\u003c stays"}`,
		`{"cmd":"\\\u003c"}`:                           `{"cmd":"\\<"}`,
		`plain`:                                        `plain`,
	} {
		if got := htmlUnescaped(in); got != want {
			t.Errorf("htmlUnescaped(%s) = %s, want %s", in, got, want)
		}
	}
}

// A call a supervisor's gate holds as well as its own: whoever decides
// is in every list, and the webhook and Slack say so.
func TestAlsoApprovers(t *testing.T) {
	m := sampleApproval()
	m.Call.Approvers, m.Call.AlsoApprovers = []string{"group:dba"}, [][]string{{"alice", "dave"}}
	if body := string(m.Body()); !strings.Contains(body, `"approvers":["group:dba"],"alsoApprovers":[["alice","dave"]],`) {
		t.Errorf("webhook body: %s", body)
	}
	if all := checkSlack(t, SlackBody(m)).texts(); !strings.Contains(all, "*Who may decide*\none of group:dba who is also one of alice, dave") {
		t.Errorf("Slack message:\n%s", all)
	}
}
