package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/server"
)

// client is a browser without a browser: a cookie jar, no redirects
// followed.
func client(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func post(t *testing.T, c *http.Client, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	resp, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// csrfOf is the CSRF token a page's forms carry.
func csrfOf(t *testing.T, page string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, `name="csrf" value="`)
	if !ok {
		t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// The scripts' contract: POST /login sets the session cookie (HttpOnly,
// Secure, SameSite=Lax) and redirects to /; a bad token is 401; every
// response carries the Content-Security-Policy; a state-changing
// request without the CSRF token is 403 and changes nothing; the inbox
// lists each waiting call with its run id and tool as text and its
// Approve and Decline buttons; POST /logout ends the session, on the
// server too; a revoked token ends its sessions; a redirect after
// sign-in stays on the server.
func TestContract(t *testing.T) {
	in := newInbox(t)
	c := client(t)
	for _, path := range []string{"/", "/login", "/healthz", "/v1/runs", "/assets/style.css", "/nope"} {
		resp, _ := get(t, c, in.url+path)
		if got := resp.Header.Get("Content-Security-Policy"); got != server.ContentSecurityPolicy || strings.Contains(got, "unsafe-inline") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, got)
		}
	}
	if resp, _ := get(t, c, in.url+"/"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("GET / signed out: %d to %q, want 303 to /login", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, body := post(t, c, in.url+"/login", url.Values{"token": {"agt_nope"}}); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "invalid, expired or revoked token") {
		t.Fatalf("a bad token: %d", resp.StatusCode)
	}
	resp, _ := post(t, c, in.url+"/login", url.Values{"token": {in.tokens["alice"]}, "next": {"//evil.example/x"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("POST /login: %d to %q, want 303 to / (never another host)", resp.StatusCode, resp.Header.Get("Location"))
	}
	var session *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == server.SessionCookie {
			session = ck
		}
	}
	if session == nil || !session.HttpOnly || !session.Secure || session.SameSite != http.SameSiteLaxMode || strings.Contains(session.Value, in.tokens["alice"]) {
		t.Fatalf("the session cookie: %+v", session)
	}
	// The cookie jar keeps a Secure cookie for https only: give it by hand.
	u, _ := url.Parse(in.url)
	c.Jar.SetCookies(u, []*http.Cookie{{Name: server.SessionCookie, Value: session.Value}})

	id := in.start("ops")
	_, page := get(t, c, in.url+"/")
	for _, want := range []string{">" + id + "<", `<span class="tool">restart</span>`, ">Approve</button>", ">Decline</button>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the inbox lacks %q", want)
		}
	}
	approve := in.url + "/runs/" + id + "/calls/call_1/approve"
	for _, form := range []url.Values{{"back": {"/"}}, {"csrf": {"forged"}, "back": {"/"}}} {
		if resp, _ := post(t, c, approve, form); resp.StatusCode != http.StatusForbidden {
			t.Errorf("an approval with CSRF %q: %d, want 403", form.Get("csrf"), resp.StatusCode)
		}
	}
	if s := in.status(id); s != "suspended" || in.ran() != 0 {
		t.Fatalf("after refused forgeries the run is %s and the tool ran %d times", s, in.ran())
	}
	csrf := csrfOf(t, page)
	req, _ := http.NewRequest("POST", approve, strings.NewReader(url.Values{"csrf": {csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	if resp, err := c.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-origin approval with the right token: %v %v, want 403", resp.StatusCode, err)
	}
	if resp, _ := post(t, c, approve, url.Values{"csrf": {csrf}, "back": {"/"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the approval: %d", resp.StatusCode)
	}
	if s := in.status(id); s != "completed" || in.ran() != 1 {
		t.Fatalf("after the approval the run is %s and the tool ran %d times", s, in.ran())
	}

	// Sign-out ends the session on the server: the cookie replayed is
	// signed out.
	if resp, _ := post(t, c, in.url+"/logout", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST /logout: %d", resp.StatusCode)
	}
	c.Jar.SetCookies(u, []*http.Cookie{{Name: server.SessionCookie, Value: session.Value}})
	if resp, _ := get(t, c, in.url+"/"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the cookie after sign-out: %d, want 303 to /login", resp.StatusCode)
	}
	_ = context.Background
	_ = time.Second
}
