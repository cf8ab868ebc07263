package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/engine/store"
)

// formOf is the HTML of the form that posts to action in page.
func formOf(t *testing.T, page, action string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, `action="`+action+`"`)
	if !ok {
		t.Fatalf("no form posts to %s", action)
	}
	form, _, _ := strings.Cut(rest, "</form>")
	return form
}

// reasonOf is the reason of the last decision on a run, as audited.
func reasonOf(t *testing.T, in *inbox, id string) string {
	t.Helper()
	ds, err := in.db.(store.AuditStore).Audit(context.Background(), store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	reason := "(no decision)"
	for _, d := range ds {
		if d.RunID == id {
			reason = d.Reason
		}
	}
	return reason
}

// The Approve, edited Approve and Resume forms have a Reason field, as
// Decline has: optional, or required where the tool says requireReason
// (the server refuses a decision without one: the call stays, the
// refusal shown at it). The reason given is audited.
func TestReasonForms(t *testing.T) {
	in := newInbox(t)
	c, _ := signedIn(t, in, "alice")
	ops, release, wipe := in.start("ops"), in.start("release"), in.start("wipe")
	_, page := get(t, c, in.url+"/")
	csrf := csrfOf(t, page)
	for _, f := range []struct{ action, want string }{
		{"/runs/" + ops + "/calls/call_1/approve", "(optional)"},
		{"/runs/" + release + "/calls/call_1/resume", "(optional)"},
		{"/runs/" + wipe + "/calls/call_1/approve", "(required)"},
		{"/runs/" + wipe + "/calls/call_1/decline", "(required)"},
	} {
		form := formOf(t, page, f.action)
		if !strings.Contains(form, `name="reason"`) || !strings.Contains(form, f.want) || strings.Contains(form, " required>") != (f.want == "(required)") {
			t.Errorf("the form posting to %s has no reason field, %s:\n%s", f.action, f.want, form)
		}
	}
	// A field with a format says how to write it, with an example.
	if form := formOf(t, page, "/runs/"+release+"/calls/call_1/resume"); !strings.Contains(form, `placeholder="2026-12-06T02:00:00Z"`) ||
		!strings.Contains(form, "format <code>date-time</code>: RFC 3339") {
		t.Errorf("the resume form's date-time field says nothing of its format:\n%s", form)
	}
	if edit := page[strings.Index(page, `name="edit" value="1"`):]; !strings.Contains(edit[:strings.Index(edit, "</form>")], `name="reason"`) {
		t.Errorf("the edited approval's form has no reason field")
	}

	back := url.Values{"csrf": {csrf}, "back": {"/"}}
	with := func(kv ...string) url.Values {
		v := url.Values{"csrf": {csrf}, "back": {"/"}}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	if resp, body := post(t, c, in.url+"/runs/"+wipe+"/calls/call_1/approve", back); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(body, "requireReason") || in.status(wipe) != "suspended" {
		t.Errorf("approving wipe without a reason: %d, run %s:\n%s", resp.StatusCode, in.status(wipe), body)
	}
	for id, f := range map[string]struct {
		action string
		form   url.Values
	}{
		ops:     {"approve", with("reason", "ticket CHG-42")},
		wipe:    {"approve", with("reason", "scratch is full")},
		release: {"resume", with("reason", "CAB approved", "d.ticket", "CHG-7", "t.ticket", "string")},
	} {
		if resp, body := post(t, c, in.url+"/runs/"+id+"/calls/call_1/"+f.action, f.form); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("%s of run %s: %d\n%s", f.action, id, resp.StatusCode, body)
		}
		if got := reasonOf(t, in, id); got != f.form.Get("reason") {
			t.Errorf("%s of run %s audited with reason %q, want %q", f.action, id, got, f.form.Get("reason"))
		}
	}
}
