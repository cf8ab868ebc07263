package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

// This file is what the browser inbox (package server/web) needs of the
// server: sign-in sessions, the identity of a browser's request, and
// calls of the /v1 routes in-process as a principal, so that the inbox
// decides through the very routes, roles, approver policy and audit the
// API does.

// SessionCookie is the name of the inbox's session cookie.
const SessionCookie = "agentctl_session"

// SessionTTL is the longest a session lasts; never past its token's
// expiry.
const SessionTTL = 12 * time.Hour

// sessionPrefix starts every session secret.
const sessionPrefix = "ags_"

// ErrSignIn is a sign-in refused: the token is malformed, unknown,
// revoked or expired (which is not said).
var ErrSignIn = errors.New("invalid, expired or revoked token")

// ErrSignInLimited is a sign-in refused because too many failed from
// the same address: guessing goes no faster there than on the API.
var ErrSignInLimited = errors.New("too many failed sign-ins from this address; wait a minute")

// ErrCrossSite is a sign-in posted from another site (login CSRF: a
// page signing its visitor in as someone else).
var ErrCrossSite = errors.New("a sign-in from another site is refused")

// SignIn checks the token a sign-in form r posted and starts a session
// for its user: the cookie's value, and when it expires. Failures spend
// the address's bucket of failed authentications, as on the API (a valid
// token passes whatever the bucket); a form posted from another site is
// refused.
func (s *Server) SignIn(r *http.Request, secret string) (cookie string, expires time.Time, err error) {
	if crossSite(r) {
		return "", time.Time{}, ErrCrossSite
	}
	ctx := r.Context()
	p, err := s.bearer(ctx, "Bearer "+strings.TrimSpace(secret))
	if err != nil {
		var ae *authError
		if !errors.As(err, &ae) {
			return "", time.Time{}, err
		}
		// As on the API: once the address's bucket of failures is spent,
		// a failure answers "too many", and a valid token still passes.
		failed := failedKey(r)
		spent := s.limit.spent(failed)
		s.limit.bucket(failed).Allow()
		if spent {
			return "", time.Time{}, ErrSignInLimited
		}
		return "", time.Time{}, ErrSignIn
	}
	var b [32]byte
	rand.Read(b[:])
	cookie = sessionPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	expires = s.now().Add(SessionTTL)
	if p.expires.Before(expires) {
		expires = p.expires
	}
	sn := &store.Session{Hash: sha256.Sum256([]byte(cookie)), TokenHash: p.hash, User: p.Name, Groups: p.Groups, ExpiresAt: expires}
	if err := s.store.CreateSession(ctx, sn); err != nil {
		return "", time.Time{}, err
	}
	return cookie, expires, nil
}

// SignOut ends the session of a cookie.
func (s *Server) SignOut(ctx context.Context, cookie string) error {
	return s.store.DeleteSession(ctx, sha256.Sum256([]byte(cookie)))
}

// Browser identifies the caller of a browser's request: its session
// cookie (while the session and its token last), else the trusted
// proxy's header. It returns the principal and, for a session, the
// cookie (the key of its CSRF tokens; for the proxy's user, "": the
// caller keys them with a per-browser cookie of its own). No
// credentials is an error.
func (s *Server) Browser(r *http.Request) (*Principal, string, error) {
	if c, err := r.Cookie(SessionCookie); err == nil && strings.HasPrefix(c.Value, sessionPrefix) {
		sn, err := s.store.SessionByHash(r.Context(), sha256.Sum256([]byte(c.Value)))
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, "", err
		case s.now().Before(sn.ExpiresAt):
			t, err := s.store.TokenByHash(r.Context(), sn.TokenHash)
			if err == nil && t.RevokedAt.IsZero() && s.now().Before(t.ExpiresAt) {
				if err := s.checkName(r.Context(), "token "+t.ID+": user", sn.User, noTokens); err != nil {
					return nil, "", err // signed in before the server took names otherwise
				}
				return &Principal{Name: sn.User, Groups: sn.Groups, Via: ViaToken, hash: sn.TokenHash, expires: sn.ExpiresAt,
					session: sn.Hash}, c.Value, nil
			}
		}
	}
	if h := s.proxyHeader(); h != "" {
		name := strings.TrimSpace(r.Header.Get(h))
		if name != "" && s.trustsProxy(r, peerFrom(r)) {
			q := r.Clone(r.Context())
			q.Header = http.Header{h: {name}}
			p, err := s.authenticate(q)
			return p, "", err
		}
	}
	return nil, "", &authError{msg: "not signed in"}
}

// crossSite reports whether a browser says a request comes from
// another site: its Origin is another host (or "null", an opaque
// origin), or its Sec-Fetch-Site says cross-site.
func crossSite(r *http.Request) bool {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return true
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return false
	}
	return o == "null" || !sameOrigin(o, r)
}

// CSRF returns the token p's state-changing requests must carry. For a
// session it is derived from the session's cookie, a secret the server
// made and holds the hash of (any server of the database checks it);
// behind the proxy, from key (a per-browser cookie, which anyone able to
// plant a cookie could choose), p's name and a secret of this process,
// so that no token can be made without the server.
func (s *Server) CSRF(p *Principal, key string) string {
	var m hash.Hash
	if p.session != ([32]byte{}) {
		m = hmac.New(sha256.New, []byte(key))
		m.Write([]byte("agentctl csrf"))
	} else {
		m = hmac.New(sha256.New, s.csrfKey[:])
		m.Write([]byte(key + "\x00" + p.Name))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// CheckCSRF reports whether a browser's request r is p's, by its token
// got and its origin: a request that says it comes from another site is
// refused whatever its token.
func (s *Server) CheckCSRF(r *http.Request, p *Principal, key, got string) bool {
	return key != "" && !crossSite(r) && hmac.Equal([]byte(s.CSRF(p, key)), []byte(got))
}

type inProcessKey struct{}

// Call serves one /v1 request in-process as p: the same routes, roles,
// limits, approver policy and audit as over the network. body, when not
// nil, is sent as JSON. It returns the status and the response's body.
func (s *Server) Call(ctx context.Context, p *Principal, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, fmt.Errorf("call %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req := httptest.NewRequestWithContext(context.WithValue(ctx, inProcessKey{}, p), method, path, rd)
	req.RemoteAddr = "127.0.0.1:0"
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes(), nil
}

// inProcess returns the principal of an in-process call (Call), which
// no network request can carry.
func inProcess(r *http.Request) (*Principal, bool) {
	p, ok := r.Context().Value(inProcessKey{}).(*Principal)
	return p, ok
}

// Events serves the event stream of every run to p, a reader, from the
// end of the feed (or after its Last-Event-ID): the inbox's live
// updates.
func (s *Server) Events(w http.ResponseWriter, r *http.Request, p *Principal) {
	if !s.has(p, RoleReader) {
		s.writeError(w, r, forbidden("the inbox's updates need the %s role; %s has %s", RoleReader, p.Name, rolesText(s.roles.of(p))))
		return
	}
	ctx, cancel := s.whileValid(r.Context(), p)
	defer cancel()
	if r.Header.Get("Last-Event-ID") == "" {
		// A page just rendered shows what happened so far: its stream
		// starts at the end of the feed, not from the first event.
		end, err := s.store.FeedEnd(ctx)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		r = r.Clone(ctx)
		r.Header.Set("Last-Event-ID", end)
	}
	s.opts.Events(w, r.WithContext(ctx), store.FeedFilter{})
}

// Has reports whether p holds a role (RoleReader, RoleApprover, ...).
func (s *Server) Has(p *Principal, role string) bool { return s.has(p, role) }

// ContentSecurityPolicy is sent with every response: scripts and styles
// only from the server's own files, no inline script, no framing.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Conversation returns the conversation of run id (a full id) to p, a
// reader: the inbox's run page.
func (s *Server) Conversation(ctx context.Context, p *Principal, id string) ([]engine.MessageView, error) {
	if !s.has(p, RoleReader) {
		return nil, forbidden("reading run %s needs the %s role; %s has %s", id, RoleReader, p.Name, rolesText(s.roles.of(p)))
	}
	return s.eng.Conversation(ctx, id)
}

// Person is the principal of user name as another party vouched for it
// (via: ViaSlack, the configuration's map of Slack's user ids): with the
// groups the server's tokens give name (none when no token names it),
// never the OS's, and no session or token to look up again.
func (s *Server) Person(ctx context.Context, name, via string) *Principal {
	groups, _ := s.tokenGroups(ctx, name)
	return &Principal{Name: name, Groups: groups, Via: via}
}

// Go runs f in the background under the server's lifetime (Options.Work)
// rather than a request's: Wait waits for it. It is for what a handler
// finishes after it has answered (Slack's three seconds).
func (s *Server) Go(f func(ctx context.Context)) {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		f(s.work)
	}()
}
