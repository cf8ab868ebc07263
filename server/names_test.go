package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/token"
)

// proxyWhoami asks whoami as the proxy's user name.
func proxyWhoami(e *testEnv, name string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/v1/whoami", nil)
	r.RemoteAddr = "10.1.3.4:5000"
	r.Header.Set("X-Forwarded-User", name)
	w := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(w, r)
	return w
}

// By default a name is ASCII, from every source: a look-alike letter
// from the proxy's header or in a token's user is refused (403), in an
// "as" too (400), naming the character and its place.
func TestNamesDefault(t *testing.T) {
	e := newEnv(t, testRoles+"trustProxyHeader: {header: X-Forwarded-User, from: [10.1.0.0/16]}\n")
	want := `"trаlice\": U+0430 CYRILLIC SMALL LETTER A at byte 3: not ASCII`
	if w := proxyWhoami(e, "trаlice"); w.Code != 403 || !strings.Contains(w.Body.String(), "the proxy's header X-Forwarded-User \\"+want) {
		t.Errorf("a Cyrillic а from the proxy: %d %s", w.Code, w.Body)
	}
	if w := proxyWhoami(e, "alice"); w.Code != 200 {
		t.Errorf("alice from the proxy: %d %s", w.Code, w.Body)
	}
	tok := e.token("trаlice", nil, time.Hour, false)
	if r := e.do("GET", "/v1/whoami", tok, nil); r.code != 403 || !strings.Contains(string(r.body), ": user \\"+want) {
		t.Errorf("a token's user with a Cyrillic а: %d %s", r.code, r.body)
	}
	grp := e.token("alice", []string{"ѕre"}, time.Hour, false)
	if r := e.do("GET", "/v1/whoami", grp, nil); r.code != 403 || !strings.Contains(string(r.body), `: group \"ѕre\": U+0455 CYRILLIC SMALL LETTER DZE at byte 1`) {
		t.Errorf("a token's group with a Cyrillic ѕ: %d %s", r.code, r.body)
	}
	id := e.startRun(e.token("ralph", nil, time.Hour, false))
	bot := e.token("bot", nil, time.Hour, false)
	r := e.do("POST", "/v1/runs/"+id+"/approve", bot, map[string]any{"as": "trаlice"})
	if r.code != 400 || !strings.Contains(string(r.body), `"pointer": "/as"`) || !strings.Contains(string(r.body), "as \\"+want) {
		t.Errorf("as with a Cyrillic а: %d %s", r.code, r.body)
	}
	if ds, err := e.db.Decisions(context.Background(), id); err != nil || len(ds) != 0 {
		t.Errorf("recorded: %v %+v", err, ds)
	}
}

// With names: {unicode: true}, names of one script pass, and one that
// looks like another known principal's (the configuration's, a
// token's) is refused, from whichever side it comes.
func TestNamesUnicode(t *testing.T) {
	e := newEnv(t, `
readers: [rita, BET, go, Иван]
runners: [ralph]
approvers: [alice, group:sre]
delegates: [bot]
names: {unicode: true}
trustProxyHeader: {header: X-Forwarded-User, from: [10.1.0.0/16]}
`)
	// Tokens made before the proxy's first request (the server reads the
	// tokens' names again at most every TokenRecheck for it).
	tok := e.token("ցօ", nil, time.Hour, false)
	greek := e.token("ΑΒΕ", []string{"ops"}, time.Hour, false)
	for _, ok := range []string{"Иван", "BET", "山田", "jürgen"} {
		if w := proxyWhoami(e, ok); w.Code != 200 {
			t.Errorf("%q from the proxy: %d %s", ok, w.Code, w.Body)
		}
	}
	for name, want := range map[string]string{
		"ᏴᎬᎢ":     `looks like \"BET\" (readers at ` + e.dir + `/config.yaml:3:17): U+13F4 CHEROKEE LETTER YV at byte 1 where it has U+0042 LATIN CAPITAL LETTER B`,
		"ցօ":      `looks like \"go\" (readers at`,
		"trаlice": `U+0430 CYRILLIC SMALL LETTER A at byte 3: Cyrillic among Latin`,
		"ａlice":   `U+FF41 FULLWIDTH LATIN SMALL LETTER A at byte 1: a compatibility character`,
		"ΑΒΕ":     "", // Greek, like ABE: a token's user below
	} {
		if want == "" {
			continue
		}
		if w := proxyWhoami(e, name); w.Code != 403 || !strings.Contains(w.Body.String(), want) {
			t.Errorf("%q from the proxy: %d %s\nwant %s", name, w.Code, w.Body, want)
		}
	}
	if r := e.do("GET", "/v1/whoami", tok, nil); r.code != 403 || !strings.Contains(string(r.body), `looks like \"go\"`) {
		t.Errorf("a token's user like go: %d %s", r.code, r.body)
	}
	if r := e.do("GET", "/v1/whoami", greek, nil); r.code != 200 {
		t.Errorf("a Greek token user: %d %s", r.code, r.body)
	}
	if w := proxyWhoami(e, "ABE"); w.Code != 403 || !strings.Contains(w.Body.String(), `looks like \"ΑΒΕ\" (the user of token `) {
		t.Errorf("ABE from the proxy, beside a token's ΑΒΕ: %d %s", w.Code, w.Body)
	}
	if w := proxyWhoami(e, "орѕ"); w.Code != 403 || !strings.Contains(w.Body.String(), `looks like \"ops\" (a group of token `) {
		t.Errorf("Cyrillic орѕ from the proxy, beside a token's group ops: %d %s", w.Code, w.Body)
	}
	id := e.startRun(e.token("ralph", nil, time.Hour, false))
	bot := e.token("bot", nil, time.Hour, false)
	if r := e.do("POST", "/v1/runs/"+id+"/approve", bot, map[string]any{"as": "ᏴᎬᎢ"}); r.code != 400 || !strings.Contains(string(r.body), `looks like \"BET\"`) {
		t.Errorf("as like BET: %d %s", r.code, r.body)
	}
	// "as" is held against the tokens as they are now.
	e.token("ΜΑΧ", nil, time.Hour, false)
	if r := e.do("POST", "/v1/runs/"+id+"/approve", bot, map[string]any{"as": "MAX"}); r.code != 400 || !strings.Contains(string(r.body), `looks like \"ΜΑΧ\" (the user of token `) {
		t.Errorf("as MAX beside a token's ΜΑΧ made a moment ago: %d %s", r.code, r.body)
	}
	if r := e.do("POST", "/v1/runs/"+id+"/approve", bot, map[string]any{"as": "Иван"}); r.code != 403 || !strings.Contains(string(r.body), "Иван is not an approver") {
		t.Errorf("as Иван: %d %s", r.code, r.body)
	}
}

// The configuration's names are checked where they are written, against
// the profile and, with Unicode names, against each other.
func TestConfigNames(t *testing.T) {
	_, err := ParseConfig("c.yaml", []byte("readers: [alice, trаlice]\napprovers: [group:ѕre, \"bob smith\"]\nslack: {signingSecret: '${{ env.S }}', botToken: '${{ env.B }}', users: {U024BE7LH: jürgen}}\n"))
	for _, want := range []string{
		`c.yaml:1:18: readers: user "trаlice": U+0430 CYRILLIC SMALL LETTER A at byte 3: not ASCII`,
		`c.yaml:2:13: approvers: group "ѕre": U+0455 CYRILLIC SMALL LETTER DZE at byte 1: not ASCII`,
		`c.yaml:2:24: approvers: user "bob smith": U+0020 SPACE at byte 4: not in a name`,
		`c.yaml:3:74: slack.users.U024BE7LH: user "jürgen": U+00FC LATIN SMALL LETTER U WITH DIAERESIS at byte 2: not ASCII`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v\nwant %s", err, want)
		}
	}
	_, err = ParseConfig("c.yaml", []byte("names: {unicode: true}\nreaders: [tralice, jürgen]\napprovers: [trаlice, ᏴᎬᎢ, group:BET]\n"))
	for _, want := range []string{
		`c.yaml:3:13: approvers: user "trаlice": U+0430 CYRILLIC SMALL LETTER A at byte 3: Cyrillic among Latin`,
		`c.yaml:3:27: approvers: group "BET" looks like "ᏴᎬᎢ" (approvers at c.yaml:3:22): U+0042 LATIN CAPITAL LETTER B at byte 1 where it has U+13F4 CHEROKEE LETTER YV`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v\nwant %s", err, want)
		}
	}
	if _, err := ParseConfig("c.yaml", []byte("names: {unicode: true}\nreaders: [tralice, jürgen, Иван, 山田, bob1, bobl]\n")); err != nil {
		t.Error(err)
	}
}

// A browser session signed in under a name the server no longer takes
// (names tightened since) is refused as the token would be.
func TestNamesSession(t *testing.T) {
	e := newEnv(t, testRoles)
	secret := e.token("alice", nil, time.Hour, false)
	hash, err := token.Parse(secret)
	if err != nil {
		t.Fatal(err)
	}
	for i, user := range []string{"alice", "trаlice"} {
		refused := i == 1
		cookie := sessionPrefix + strconv.Itoa(i)
		sn := &store.Session{Hash: sha256.Sum256([]byte(cookie)), TokenHash: hash, User: user, ExpiresAt: time.Now().Add(time.Hour)}
		if err := e.db.CreateSession(context.Background(), sn); err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.AddCookie(&http.Cookie{Name: SessionCookie, Value: cookie})
		p, _, err := e.srv.Browser(r)
		if got := errors.Is(err, ErrNameRefused); got != refused || !refused && (err != nil || p.Name != user) {
			t.Errorf("a session of %q: %v %v", user, p, err)
		}
	}
}
