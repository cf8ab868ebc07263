package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/token"
)

// How a principal was identified.
const (
	ViaSocket = "socket" // the Unix socket peer's OS user (SO_PEERCRED)
	ViaToken  = "token"  // a bearer token
	ViaProxy  = "proxy"  // the header of a trusted authenticating proxy
	ViaSlack  = "slack"  // a Slack user id Slack vouched for, mapped by the configuration (server/slack)
)

// Principal is the caller as the server authenticated it.
type Principal struct {
	Name   string
	Groups []string // a token's, the OS's for a socket peer; none for a proxy's user
	Via    string

	hash    [32]byte  // a token's hash, to look it up again (Via token)
	expires time.Time // a token's expiry (Via token)
	session [32]byte  // a browser session's hash, to look it up again; zero: none
}

// peer is the process at the other end of a Unix socket connection.
type peer struct {
	uid, gid uint32
	pid      int32
	err      error // the credentials could not be read
}

type peerKey struct{}

// connContext records a socket connection's peer credentials in the
// context of its requests (http.Server.ConnContext).
func connContext(ctx context.Context, c net.Conn) context.Context {
	p, err := peerOf(c)
	if err != nil {
		p = &peer{err: err}
	}
	if p == nil {
		return ctx
	}
	return context.WithValue(ctx, peerKey{}, p)
}

// peerFrom returns the socket peer of a request, or nil over TCP.
func peerFrom(r *http.Request) *peer {
	p, _ := r.Context().Value(peerKey{}).(*peer)
	return p
}

// authError is a request without usable credentials: 401.
type authError struct{ msg, hint string }

func (e *authError) Error() string { return e.msg }

// errBadToken is the one answer to a token that is malformed, unknown,
// revoked or expired: which of these it was is not said.
var errBadToken = &authError{msg: "invalid, expired or revoked token", hint: "ask an administrator for a new token (agentctl token create)"}

// authenticate identifies the caller of a request: a bearer token, else
// the trusted proxy's header, else the socket peer. The proxy header is
// removed from every request it is not trusted on.
func (s *Server) authenticate(r *http.Request) (*Principal, error) {
	if p, ok := inProcess(r); ok {
		return p, nil
	}
	if err := tokenInURL(r); err != nil {
		return nil, err
	}
	p := peerFrom(r)
	var fromProxy string
	if h := s.proxyHeader(); h != "" {
		fromProxy = r.Header.Get(h)
		r.Header.Del(h) // nobody downstream sees it
		if fromProxy != "" && !s.trustsProxy(r, p) {
			fromProxy = ""
		}
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		return s.bearer(r.Context(), auth)
	}
	if fromProxy != "" {
		name := strings.TrimSpace(fromProxy)
		if strings.Contains(name, token.Prefix) {
			return nil, &authError{msg: "the proxy's user header does not hold a user name"}
		}
		if err := s.checkName(r.Context(), "the proxy's header "+s.proxyHeader(), name, cachedTokens); err != nil {
			return nil, err
		}
		return &Principal{Name: name, Via: ViaProxy}, nil
	}
	if p != nil {
		if p.err != nil {
			return nil, &authError{msg: "the socket peer's credentials cannot be read"}
		}
		name, groups := osIdentity(p.uid)
		return &Principal{Name: name, Groups: groups, Via: ViaSocket}, nil
	}
	return nil, &authError{msg: "no credentials", hint: "send Authorization: Bearer TOKEN (agentctl token create), or connect to the server's Unix socket"}
}

// tokenInURL refuses a request that carries a token in its URL: URLs end
// up in logs and browser histories.
func tokenInURL(r *http.Request) error {
	for k, vs := range r.URL.Query() {
		lk := strings.ToLower(k)
		if lk == "token" || lk == "access_token" || slices.ContainsFunc(vs, func(v string) bool { return strings.Contains(v, token.Prefix) }) {
			return &authError{msg: "a token in the URL is refused", hint: "send it in a header: Authorization: Bearer TOKEN; then revoke this one (agentctl token revoke): URLs are logged"}
		}
	}
	return nil
}

// bearer authenticates an Authorization header.
func (s *Server) bearer(ctx context.Context, auth string) (*Principal, error) {
	scheme, secret, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, &authError{msg: "unsupported Authorization scheme", hint: "send Authorization: Bearer TOKEN"}
	}
	hash, err := token.Parse(strings.TrimSpace(secret))
	if err != nil {
		return nil, errBadToken
	}
	t, err := s.store.TokenByHash(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, errBadToken
	case err != nil:
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	now := s.now()
	if !token.Equal(t.Hash, hash) || !t.RevokedAt.IsZero() || !now.Before(t.ExpiresAt) {
		return nil, errBadToken
	}
	// Tokens were checked against each other as they were made (token
	// create): here, against the profile and the known principals.
	if err := s.checkName(ctx, "token "+t.ID+": user", t.User, noTokens); err != nil {
		return nil, err
	}
	for _, g := range t.Groups {
		if err := s.checkName(ctx, "token "+t.ID+": group", g, noTokens); err != nil {
			return nil, err
		}
	}
	return &Principal{Name: t.User, Groups: slices.Clone(t.Groups), Via: ViaToken, hash: hash, expires: t.ExpiresAt}, nil
}

// whileValid returns a context that ends when p's token expires or, as
// a look every TokenRecheck finds, is revoked or gone (or p's browser
// session is: signed out); for a principal
// of the socket or the proxy, ctx itself. A long request (an event
// stream) lasts no longer than the credentials it was opened with.
func (s *Server) whileValid(ctx context.Context, p *Principal) (context.Context, context.CancelFunc) {
	if p.Via != ViaToken {
		return context.WithCancel(ctx)
	}
	ctx, cancel := context.WithDeadline(ctx, p.expires)
	go func() {
		t := time.NewTicker(s.opts.TokenRecheck)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			tok, err := s.store.TokenByHash(ctx, p.hash)
			if errors.Is(err, store.ErrNotFound) || err == nil && !tok.RevokedAt.IsZero() {
				cancel()
				return
			}
			if p.session != ([32]byte{}) {
				if _, err := s.store.SessionByHash(ctx, p.session); errors.Is(err, store.ErrNotFound) {
					cancel() // signed out
					return
				}
			}
		}
	}()
	return ctx, cancel
}

// proxyHeader is the configured proxy header, or "".
func (s *Server) proxyHeader() string {
	if h := s.cfg.TrustProxyHeader; h != nil {
		return h.Header
	}
	return ""
}

// trustsProxy reports whether a request comes from the trusted proxy: a
// TCP peer in trustProxyHeader.from, or a socket peer among proxyUsers.
func (s *Server) trustsProxy(r *http.Request, p *peer) bool {
	if p != nil {
		if p.err != nil {
			return false
		}
		name, _ := osName(p.uid)
		return slices.Contains(s.cfg.ProxyUsers, name)
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	return err == nil && s.cfg.trustedProxy(ap.Addr())
}

// osName names the OS user with this uid; uid:N when it has no name.
func osName(uid uint32) (string, *user.User) {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil || u.Username == "" {
		return fmt.Sprintf("uid:%d", uid), nil
	}
	return u.Username, u
}

// osIdentity returns the name and the OS groups of the user with this
// uid, read now.
func osIdentity(uid uint32) (string, []string) {
	name, u := osName(uid)
	if u == nil {
		return name, nil
	}
	ids, err := u.GroupIds()
	if err != nil {
		return name, nil
	}
	var groups []string
	for _, id := range ids {
		if g, err := user.LookupGroupId(id); err == nil {
			groups = append(groups, g.Name)
		}
	}
	return name, groups
}
