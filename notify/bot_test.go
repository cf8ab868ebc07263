package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	testToken = "xoxb-111-222-TESTTOKENSECRET"
	testRunID = "01JD3F8Q2W5X7Y9Z0ABCDEFGHJ"
)

// botApproval is an approval whose ids make an ActionValue.
func botApproval() *Message {
	m := sampleApproval()
	m.Run.ID, m.Run.RootID = testRunID, testRunID
	return m
}

// request is what a stand-in of Slack received.
type request struct {
	path, contentType, auth string
	body                    []byte
}

// standIn is a loopback stand-in of Slack answering status and answer
// (with header h) to every request, and recording them.
func standIn(t *testing.T, status int, answer string, h http.Header) (*httptest.Server, func() []request) {
	t.Helper()
	var got []request
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, request{r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), body})
		mu.Unlock()
		if r.Method != http.MethodPost {
			t.Errorf("method %s", r.Method)
		}
		for k, vs := range h {
			w.Header()[k] = vs
		}
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []request {
		mu.Lock()
		defer mu.Unlock()
		return append([]request(nil), got...)
	}
}

// noToken fails t when err's text holds the token.
func noToken(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), "TESTTOKENSECRET") {
		t.Errorf("error holds the token: %s", err)
	}
}

type postDoc struct {
	Channel string `json:"channel"`
	Text    string `json:"text"`
	Blocks  []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Elements []struct {
			Type     string          `json:"type"`
			ActionID string          `json:"action_id"`
			Text     json.RawMessage `json:"text"` // a string in a context block
			Value    string          `json:"value"`
			URL      string          `json:"url"`
			Style    string          `json:"style"`
		} `json:"elements"`
	} `json:"blocks"`
}

func TestBotPostApproval(t *testing.T) {
	for _, suffix := range []string{"/api", "/api/"} {
		srv, got := standIn(t, 200, `{"ok":true,"channel":"C0123ABCD","ts":"1700000000.000100"}`, nil)
		ts, err := Bot{APIURL: srv.URL + suffix, Token: testToken}.Post(context.Background(), "C0123ABCD", botApproval())
		if err != nil || ts != "1700000000.000100" {
			t.Fatalf("Post = %q, %v", ts, err)
		}
		reqs := got()
		if len(reqs) != 1 {
			t.Fatalf("%d requests", len(reqs))
		}
		r := reqs[0]
		if r.path != "/api/chat.postMessage" || r.contentType != "application/json; charset=utf-8" || r.auth != "Bearer "+testToken {
			t.Errorf("request %s %q %q", r.path, r.contentType, r.auth)
		}
		var doc postDoc
		if err := json.Unmarshal(r.body, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Channel != "C0123ABCD" || !strings.HasPrefix(doc.Text, "approval needed: restart_service") {
			t.Errorf("channel %q, text %q", doc.Channel, doc.Text)
		}
		last := doc.Blocks[len(doc.Blocks)-1]
		if doc.Blocks[0].Type != "header" || last.Type != "actions" || last.BlockID != "agentctl.actions" || len(last.Elements) != 2 {
			t.Fatalf("blocks %+v", doc.Blocks)
		}
		want := testRunID + "/call_1"
		for i, w := range []struct{ id, text, style string }{{"agentctl.approve", "Approve", "primary"}, {"agentctl.decline", "Decline", "danger"}} {
			e := last.Elements[i]
			if e.Type != "button" || e.ActionID != w.id || string(e.Text) != `{"type":"plain_text","text":"`+w.text+`"}` || e.Style != w.style || e.Value != want || e.URL != "" {
				t.Errorf("button %d = %+v", i, e)
			}
		}
		if strings.Contains(string(r.body), testToken) {
			t.Errorf("the body holds the token")
		}
	}
}

func TestBotPostActions(t *testing.T) {
	srv, got := standIn(t, 200, `{"ok":true,"ts":"1.2"}`, nil)
	b := Bot{APIURL: srv.URL, Token: testToken}
	suspend := &Message{Type: Suspend, Run: Run{ID: testRunID}, Call: &Call{ID: "c1", Tool: "ask"}, URL: "https://agentctl.example/inbox/x?call=c1&a=<b>"}
	badRun := botApproval()
	badRun.Run.ID, badRun.Run.RootID = "01JRUN", "01JROOT"
	badCall := botApproval()
	badCall.Call.ID = "call 1/2"
	for _, m := range []*Message{suspend, badRun, badCall, {Type: Completed, Run: Run{ID: testRunID}}, {Type: Suspend, URL: "javascript:alert(1)"}} {
		if _, err := b.Post(context.Background(), "C1", m); err != nil {
			t.Fatal(err)
		}
	}
	reqs := got()
	var docs []postDoc
	for _, r := range reqs {
		var doc postDoc
		if err := json.Unmarshal(r.body, &doc); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc)
	}
	last := docs[0].Blocks[len(docs[0].Blocks)-1]
	if last.Type != "actions" || last.BlockID != "agentctl.actions" || len(last.Elements) != 1 {
		t.Fatalf("suspension's blocks: %+v", docs[0].Blocks)
	}
	if e := last.Elements[0]; e.ActionID != "agentctl.open" || string(e.Text) != `{"type":"plain_text","text":"Open the form"}` || e.URL != "https://agentctl.example/inbox/x?call=c1&a=%3Cb%3E" || e.Value != "" {
		t.Errorf("link button %+v", e)
	}
	for i, doc := range docs[1:] {
		for _, b := range doc.Blocks {
			if b.Type == "actions" {
				t.Errorf("message %d has actions: %+v", i+1, b)
			}
		}
	}
}

func TestBotErrors(t *testing.T) {
	tests := []struct {
		name, answer string
		status       int
		retryAfter   string
		permanent    bool
		wait         time.Duration
		want         string
	}{
		{name: "channel_not_found", status: 200, answer: `{"ok":false,"error":"channel_not_found"}`, permanent: true, want: ": chat.postMessage: channel_not_found"},
		{name: "invalid_auth", status: 200, answer: `{"ok":false,"error":"invalid_auth","response_metadata":{"messages":["bad token ` + testToken + `"]}}`, permanent: true, want: "chat.postMessage: invalid_auth (bad token …)"},
		{name: "invalid_blocks", status: 200, answer: `{"ok":false,"error":"invalid_blocks"}`, permanent: true},
		{name: "ratelimited", status: 200, answer: `{"ok":false,"error":"ratelimited"}`, retryAfter: "2", wait: 2 * time.Second, want: "chat.postMessage: ratelimited"},
		{name: "internal_error", status: 200, answer: `{"ok":false,"error":"internal_error"}`},
		{name: "unknown", status: 200, answer: `{"ok":false,"error":"something_new"}`, want: "something_new"},
		{name: "no code", status: 200, answer: `{"ok":false}`},
		{name: "not json", status: 200, answer: `<html>proxy</html>`, want: "not Slack's JSON"},
		{name: "429", status: 429, answer: `{"ok":false,"error":"ratelimited"}`, retryAfter: "30", wait: 30 * time.Second, want: "answered 429"},
		{name: "503", status: 503, answer: "down " + testToken, want: "answered 503 Service Unavailable: down …"},
		{name: "408", status: 408},
		{name: "403", status: 403, permanent: true},
		{name: "404", status: 404, permanent: true},
		{name: "redirect", status: 302, permanent: true, want: "redirects are not followed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var followed atomic.Int32
			elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				followed.Add(1)
				io.WriteString(w, `{"ok":true,"ts":"1"}`)
			}))
			defer elsewhere.Close()
			h := http.Header{}
			if tt.retryAfter != "" {
				h.Set("Retry-After", tt.retryAfter)
			}
			if tt.status == 302 {
				h.Set("Location", elsewhere.URL+"/api/chat.postMessage")
			}
			srv, _ := standIn(t, tt.status, tt.answer, h)
			ts, err := Bot{APIURL: srv.URL, Token: testToken}.Post(context.Background(), "C1", botApproval())
			var se *SendError
			if ts != "" || !errors.As(err, &se) || se.Permanent != tt.permanent || errors.Is(err, ErrPermanent) != tt.permanent || se.RetryAfter != tt.wait || se.Status != tt.status {
				t.Fatalf("Post = %q, %#v", ts, err)
			}
			noToken(t, err)
			msg := err.Error()
			if !strings.HasPrefix(msg, "slack api 127.0.0.1:") || !strings.Contains(msg, "chat.postMessage") || !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Errorf("error = %q, want %q", msg, tt.want)
			}
			if followed.Load() != 0 {
				t.Errorf("the redirect was followed")
			}
		})
	}
}

func TestBotRefusals(t *testing.T) {
	srv, got := standIn(t, 200, `{"ok":true,"ts":"1"}`, nil)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	ctx := context.Background()
	bad := []struct {
		name      string
		err       error
		permanent bool
	}{}
	add := func(name string, err error, permanent bool) {
		bad = append(bad, struct {
			name      string
			err       error
			permanent bool
		}{name, err, permanent})
	}
	_, err := Bot{APIURL: srv.URL, Token: "xoxb-TESTTOKENSECRET\r\nX-Evil: 1"}.Post(ctx, "C1", botApproval())
	add("token with a line break", err, true)
	_, err = Bot{APIURL: srv.URL}.Post(ctx, "C1", botApproval())
	add("no token", err, true)
	_, err = Bot{APIURL: srv.URL, Token: testToken}.Post(ctx, "", botApproval())
	add("no channel", err, true)
	_, err = Bot{APIURL: srv.URL, Token: testToken}.Post(ctx, "C1", nil)
	add("no message", err, true)
	_, err = Bot{APIURL: "ftp://x/" + testToken, Token: testToken}.Post(ctx, "C1", botApproval())
	add("bad API URL", err, true)
	add("bad blocks", Bot{APIURL: srv.URL, Token: testToken}.Update(ctx, "C1", "1.2", "x", json.RawMessage(`[{`)), true)
	add("no ts", Bot{APIURL: srv.URL, Token: testToken}.Update(ctx, "C1", "", "x", nil), true)
	add("no trigger", Bot{APIURL: srv.URL, Token: testToken}.OpenView(ctx, "", DeclineView("", "")), true)
	add("no view", Bot{APIURL: srv.URL, Token: testToken}.OpenView(ctx, "123.456", nil), true)
	_, err = Bot{APIURL: closed.URL + "/" + testToken + "?token=" + testToken, Token: testToken}.Post(ctx, "C1", botApproval())
	add("network", err, false)
	for _, b := range bad {
		var se *SendError
		if !errors.As(b.err, &se) || errors.Is(b.err, ErrPermanent) != b.permanent {
			t.Errorf("%s: err = %#v, want permanent %v", b.name, b.err, b.permanent)
		}
		noToken(t, b.err)
		if b.err != nil && strings.ContainsAny(b.err.Error(), "\r\n") {
			t.Errorf("%s: error of more than one line: %q", b.name, b.err)
		}
	}
	if n := len(got()); n != 0 {
		t.Errorf("%d requests made", n)
	}
}

func TestBotUpdateOpenView(t *testing.T) {
	srv, got := standIn(t, 200, `{"ok":true}`, nil)
	b := Bot{APIURL: srv.URL + "/api/", Token: testToken}
	ctx := context.Background()
	if err := b.Update(ctx, "C1", "1700.1", "done", json.RawMessage(` [ {"type":"divider"} ] `)); err != nil {
		t.Fatal(err)
	}
	if err := b.OpenView(ctx, "trig.1", DeclineView(testRunID+"/call_1", "meta")); err != nil {
		t.Fatal(err)
	}
	reqs := got()
	if len(reqs) != 2 || reqs[0].path != "/api/chat.update" || reqs[1].path != "/api/views.open" {
		t.Fatalf("requests %+v", reqs)
	}
	for _, r := range reqs {
		if r.auth != "Bearer "+testToken || r.contentType != "application/json; charset=utf-8" {
			t.Errorf("%s: headers %q %q", r.path, r.auth, r.contentType)
		}
	}
	if s := string(reqs[0].body); s != `{"channel":"C1","ts":"1700.1","text":"done","blocks":[{"type":"divider"}]}` {
		t.Errorf("chat.update body %s", s)
	}
	var open struct {
		TriggerID string `json:"trigger_id"`
		View      struct {
			CallbackID string `json:"callback_id"`
		} `json:"view"`
	}
	if err := json.Unmarshal(reqs[1].body, &open); err != nil || open.TriggerID != "trig.1" || open.View.CallbackID != "agentctl.decline" {
		t.Errorf("views.open body %s", reqs[1].body)
	}

	srv2, _ := standIn(t, 200, `{"ok":false,"error":"expired_trigger_id"}`, nil)
	err := Bot{APIURL: srv2.URL, Token: testToken}.OpenView(ctx, "trig.1", DeclineView("", ""))
	if !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "views.open: expired_trigger_id") {
		t.Errorf("OpenView = %v", err)
	}
	err = Bot{APIURL: srv2.URL, Token: testToken}.Update(ctx, "C1", "1.2", "x", nil)
	if !strings.HasSuffix(err.Error(), ": chat.update: expired_trigger_id") {
		t.Errorf("Update = %v", err)
	}
}

func TestBotRespond(t *testing.T) {
	srv, got := standIn(t, 200, `{"ok":true}`, nil)
	other, otherGot := standIn(t, 200, `{"ok":true}`, nil)
	b := Bot{APIURL: srv.URL + "/api/", Token: testToken}
	ctx := context.Background()
	hook := srv.URL + "/actions/T000/111/RESPONSESECRETPATH"
	if err := b.Ephemeral(ctx, hook, "you may not decide this call"); err != nil {
		t.Fatal(err)
	}
	if err := b.Replace(ctx, hook, "approved", json.RawMessage(`[{"type":"divider"}]`)); err != nil {
		t.Fatal(err)
	}
	reqs := got()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, want := range []string{
		`{"response_type":"ephemeral","replace_original":false,"text":"you may not decide this call"}`,
		`{"replace_original":true,"text":"approved","blocks":[{"type":"divider"}]}`,
	} {
		r := reqs[i]
		if r.path != "/actions/T000/111/RESPONSESECRETPATH" || r.auth != "" || r.contentType != "application/json; charset=utf-8" || string(r.body) != want {
			t.Errorf("request %d: %s auth %q %q %s", i, r.path, r.auth, r.contentType, r.body)
		}
	}
	for _, u := range []string{
		other.URL + "/actions/T/1/x", "https://evil.example/actions/T/1/x", "http://hooks.slack.com/actions/T/1/x",
		"https://hooks.slack.com.evil.example/actions", "javascript:alert(1)", "",
	} {
		for _, err := range []error{b.Ephemeral(ctx, u, "x"), b.Replace(ctx, u, "x", nil)} {
			if !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "respond") {
				t.Errorf("response_url %q: err = %v", u, err)
			}
		}
	}
	if n := len(otherGot()); n != 0 {
		t.Errorf("%d requests to another host", n)
	}

	gone, _ := standIn(t, 404, "expired_url "+"RESPONSESECRETPATH", nil)
	err := Bot{APIURL: gone.URL, Token: testToken}.Ephemeral(ctx, gone.URL+"/actions/T000/111/RESPONSESECRETPATH", "x")
	if !errors.Is(err, ErrPermanent) || strings.Contains(err.Error(), "RESPONSESECRETPATH") {
		t.Errorf("Ephemeral to a 404 = %v", err)
	}
	used, _ := standIn(t, 200, `{"ok":false,"error":"used_url"}`, nil)
	err = Bot{APIURL: used.URL}.Replace(ctx, used.URL+"/actions/T000/111/RESPONSESECRETPATH", "x", nil)
	if !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "respond: used_url") {
		t.Errorf("Replace to a used URL = %v", err)
	}
}
