package web_test

import (
	"bufio"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/server"
)

// signedIn is a client signed in as user, with its session cookie.
func signedIn(t *testing.T, in *inbox, user string) (*http.Client, string) {
	t.Helper()
	c := client(t)
	resp, _ := post(t, c, in.url+"/login", url.Values{"token": {in.tokens[user]}})
	for _, ck := range resp.Cookies() {
		if ck.Name == server.SessionCookie {
			u, _ := url.Parse(in.url)
			c.Jar.SetCookies(u, []*http.Cookie{{Name: server.SessionCookie, Value: ck.Value}})
			return c, ck.Value
		}
	}
	t.Fatalf("sign-in as %s set no session cookie", user)
	return nil, ""
}

// What an attacker tried against the inbox, each refused: a stream
// outliving sign-out; a sign-in posted from another site; guessing
// tokens at /login unthrottled; redirects off the server; tokens in
// URLs; directory listings; bidi controls and JSON's HTML escapes
// hiding what runs.
func TestAttacks(t *testing.T) {
	in := newInbox(t)
	c, _ := signedIn(t, in, "alice")

	// Sign-out ends an event stream already open.
	resp, err := c.Get(in.url + "/events")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /events: %v %v", resp, err)
	}
	_, page := get(t, c, in.url+"/")
	post(t, c, in.url+"/logout", url.Values{"csrf": {csrfOf(t, page)}})
	ended := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
		}
		close(ended)
	}()
	in.start("ops") // an event the stream must not carry to one signed out
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the event stream outlived its sign-out")
	}
	resp.Body.Close()

	// A sign-in from another site; then guessing.
	for _, h := range []http.Header{{"Origin": {"https://evil.example"}}, {"Origin": {"null"}}, {"Sec-Fetch-Site": {"cross-site"}}} {
		req, _ := http.NewRequest("POST", in.url+"/login", strings.NewReader(url.Values{"token": {in.tokens["alice"]}}.Encode()))
		req.Header = h
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r, err := client(t).Do(req)
		if err != nil || r.StatusCode != http.StatusForbidden {
			t.Errorf("a sign-in with %v: %v %v, want 403", h, r.StatusCode, err)
		}
	}
	limited := false
	for range 200 {
		if r, _ := post(t, client(t), in.url+"/login", url.Values{"token": {"agt_guess"}}); r.StatusCode == http.StatusTooManyRequests {
			limited = true
			break
		}
	}
	if !limited {
		t.Error("200 failed sign-ins from one address were never throttled")
	}

	c, _ = signedIn(t, in, "bob")
	for _, next := range []string{"/\t/evil.example", "//evil.example", "/\\evil.example", "https:evil.example", "/ /evil"} {
		if r, _ := get(t, client(t), in.url+"/login?next="+url.QueryEscape(next)); r.StatusCode != http.StatusOK {
			t.Fatalf("GET /login: %d", r.StatusCode)
		}
		_, body := get(t, client(t), in.url+"/login?next="+url.QueryEscape(next))
		if !strings.Contains(body, `name="next" value="/"`) {
			t.Errorf("next %q is kept in the sign-in form", next)
		}
	}
	for path, want := range map[string]int{"/?token=" + in.tokens["bob"]: 400, "/assets/": 404, "/favicon.ico": 204, "/runs/%2e%2e": 404} {
		if r, _ := get(t, c, in.url+path); r.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, r.StatusCode, want)
		}
	}

	// What runs is what is shown: U+202E written out, & as itself.
	id := in.startWith("note", "report.\u202egnp.exe && rm")
	_, page = get(t, c, in.url+"/")
	if strings.Contains(page, "\u202e") || !strings.Contains(page, `report.\u202egnp.exe &amp;&amp; rm`) || strings.Contains(page, `\u0026`) {
		t.Errorf("the inbox shows the arguments as:\n%s", between(page, id))
	}
	_, page = get(t, c, in.url+"/runs/"+id)
	if strings.Contains(page, "\u202e") || !strings.Contains(page, `report.\u{202E}gnp.exe &amp;&amp; rm`) {
		t.Errorf("the run page shows the input raw")
	}
}

// between is the part of a page about run id, for messages.
func between(page, id string) string {
	i := strings.Index(page, `data-run="`+id)
	if i < 0 {
		return "(not there)"
	}
	return page[i:min(len(page), i+1500)]
}
