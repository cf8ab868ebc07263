package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The inbox in a real browser (Chromium, headless): sign in; a call
// that starts waiting shows in the open inbox without a reload; an edit
// of the arguments that breaks the tool's schema is refused at the field
// and runs nothing, a valid one approves and the tool runs once; a
// resume form with bad data shows the errors at their fields and leaves
// the run suspended, good data completes it; a reader who is no
// approver is refused, and the refusal is audited; two sessions
// approving one call: one wins, the other is told who did.
func TestBrowserInbox(t *testing.T) {
	in := newInbox(t)
	alice := browser(t)
	in.signIn(alice, "alice")

	// Live: the run starts after the page was loaded.
	id := in.start("ops")
	// A call, once the list is done refreshing (no refresh replaces it
	// under a click).
	call := fmt.Sprintf(`#inbox[data-state="idle"] article[data-run="%s"][data-call="call_1"]`, id)
	if got := text(t, alice, call+` .tool`); got != "restart" {
		t.Fatalf("the inbox shows tool %q, want restart", got)
	}
	if got := text(t, alice, call+` .run-id`); got != id {
		t.Fatalf("the inbox shows run %q, want %s", got, id)
	}

	// An edit the tool's input schema refuses: the error at the field.
	args := fmt.Sprintf(`#args-%s-call_1`, id)
	run(t, alice,
		chromedp.Click(chromedp.CSS(call+` details.edit summary`)),
		chromedp.SetValue(chromedp.CSS(args), `{"service": "apache"}`),
		chromedp.Click(chromedp.CSS(call+` button.approve-edited`)),
	)
	if got := text(t, alice, call+` .field-error`); !strings.Contains(got, "/args/service") {
		t.Fatalf("the edit's error says %q, want it at /args/service", got)
	}
	if s := in.status(id); s != "suspended" || in.ran() != 0 {
		t.Fatalf("after a refused edit the run is %s and the tool ran %d times", s, in.ran())
	}
	run(t, alice,
		chromedp.SetValue(chromedp.CSS(args), `{"service": "postgres"}`),
		chromedp.Click(chromedp.CSS(call+` button.approve-edited`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)),
	)
	if s := in.status(id); s != "completed" || in.ran() != 1 {
		t.Fatalf("after the approval the run is %s and the tool ran %d times, want completed and once", s, in.ran())
	}

	// A resume form: bad data, then good.
	rid := in.start("release")
	run(t, alice, chromedp.Navigate(in.url+"/runs/"+rid))
	ticket := fmt.Sprintf(`#d-%s-call_1-ticket`, rid)
	run(t, alice,
		chromedp.SetValue(chromedp.CSS(ticket), "nope"),
		chromedp.Click(chromedp.CSS(`button.resume`)),
	)
	if got := text(t, alice, `.field-error[data-field="ticket"]`); !strings.Contains(got, "pattern") {
		t.Fatalf("the ticket's error says %q, want the pattern it breaks", got)
	}
	if s := in.status(rid); s != "suspended" {
		t.Fatalf("after bad resume data the run is %s, want suspended", s)
	}
	run(t, alice,
		chromedp.SetValue(chromedp.CSS(ticket), "CHG-7"),
		chromedp.Click(chromedp.CSS(`button.resume`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)),
	)
	if got := text(t, alice, `.status`); got != "completed" {
		t.Fatalf("the run page says %q after the resume, want completed", got)
	}

	// carol reads but may not approve: she is told why, and it is audited.
	carol := browser(t)
	in.signIn(carol, "carol")
	cid := in.start("ops")
	ccall := fmt.Sprintf(`#inbox[data-state="idle"] article[data-run="%s"][data-call="call_1"]`, cid)
	run(t, carol, chromedp.WaitVisible(chromedp.CSS(ccall)), chromedp.Click(chromedp.CSS(ccall+` button.approve`)))
	if got := text(t, carol, ccall+` .problem .message`); !strings.Contains(got, "carol") {
		t.Fatalf("carol's refusal says %q", got)
	}
	if !strings.Contains(fmt.Sprint(in.api("GET", "/v1/runs/"+cid, "")["decisions"]), "refused") {
		t.Fatalf("carol's refused attempt is not in the audit")
	}

	// alice and bob approve the same call: one wins, the other is told.
	bob := browser(t)
	in.signIn(bob, "bob")
	run(t, alice, chromedp.Navigate(in.url+"/"), chromedp.WaitVisible(chromedp.CSS(ccall)))
	// bob is about to click (his focus on the button holds the live
	// refresh back, so the form stays as he sees it) when alice does.
	run(t, bob, chromedp.WaitVisible(chromedp.CSS(ccall)), chromedp.Focus(chromedp.CSS(ccall+` button.approve`)))
	run(t, alice, chromedp.Click(chromedp.CSS(ccall+` button.approve`)), chromedp.WaitVisible(chromedp.CSS(`.flash`)))
	run(t, bob, chromedp.Click(chromedp.CSS(ccall+` button.approve`)))
	if got := text(t, bob, `.problem .message`); !strings.Contains(got, "already approved by alice") {
		t.Fatalf("bob is told %q, want who approved", got)
	}
	if in.ran() != 2 {
		t.Fatalf("the tool ran %d times, want twice (once per approved run)", in.ran())
	}
}
