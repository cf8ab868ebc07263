// Package client speaks to an agentctl server (agentctl serve) over its
// JSON HTTP API under /v1: over http(s) with a bearer token, or over the
// server's Unix socket, where the kernel identifies the caller and no
// token is ever sent.
//
// Runs come back as the engine prints them (engine.RunView,
// engine.RunDetail); errors as a typed *Error carrying the API's error
// object, or an *UnreachableError when the server cannot be reached.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/api"
)

// Timeouts of the client's requests. Event streams have none: they end
// with their context or when the run rests.
const (
	dialTimeout    = 10 * time.Second
	requestTimeout = 60 * time.Second
	// waitSlack is how much longer than its ?wait= a decision's request
	// may take before the client gives up on the answer.
	waitSlack = 30 * time.Second
	// maxBody caps what the client reads of one answer.
	maxBody = 64 << 20
	// maxRetryAfter caps the wait a rate-limited request honours.
	maxRetryAfter = 5 * time.Second
)

// Client is a connection to one server. It is safe for concurrent use.
type Client struct {
	server string   // as given, for messages
	base   *url.URL // scheme and host requests go to
	token  string   // sent over http(s) only
	hc     *http.Client
	// keyRetry is how long a change with an idempotency key is repeated
	// (keyRetry, the constant, but in tests).
	keyRetry time.Duration
}

// New returns a client of server: https://host[:port], http://host[:port]
// or unix:/path/to.sock (HTTP over the server's Unix socket). The token,
// when set, is sent as "Authorization: Bearer" over http(s); it is never
// sent to a unix: server (the kernel identifies the caller there), never
// in a URL, and never over plain http to a host other than loopback.
func New(server, token string) (*Client, error) {
	c := &Client{server: server, keyRetry: keyRetry}
	token = strings.TrimSpace(token) // as read from a file, with its newline
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		TLSHandshakeTimeout:   dialTimeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	if path, ok := strings.CutPrefix(server, "unix:"); ok {
		if path == "" {
			return nil, fmt.Errorf("server %q: want unix:/path/to.sock", server)
		}
		d := net.Dialer{Timeout: dialTimeout}
		tr.Proxy = nil
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		}
		// The host is a placeholder: the socket is the server.
		c.base = &url.URL{Scheme: "http", Host: "agentctl"}
	} else {
		u, err := parseURL(server)
		if err != nil {
			return nil, err
		}
		if token != "" && u.Scheme == "http" && !loopback(u.Hostname()) {
			return nil, fmt.Errorf("server %s: refusing to send AGENTCTL_TOKEN over plain http to a host other than loopback: use https", server)
		}
		tr.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
		c.base, c.token = u, token
	}
	c.hc = &http.Client{Transport: tr, CheckRedirect: noRedirect}
	return c, nil
}

// parseURL checks an http(s) server URL: a scheme and a host, nothing
// else (credentials and tokens never travel in URLs).
func parseURL(server string) (*url.URL, error) {
	shown := redact(server)
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("server %q: not a URL: want https://HOST[:PORT], http://HOST[:PORT] or unix:/path/to.sock", shown)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("server %q: want https://HOST[:PORT], http://HOST[:PORT] or unix:/path/to.sock", shown)
	case u.Host == "":
		return nil, fmt.Errorf("server %q: no host", shown)
	case u.User != nil:
		return nil, fmt.Errorf("server %s: credentials do not go in the URL: set AGENTCTL_TOKEN", shown)
	case u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/"):
		return nil, fmt.Errorf("server %s: want the server's address alone, without a path or query", shown)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// redact cuts what may hold a secret from a server address for messages:
// credentials, a query, a fragment.
func redact(server string) string {
	s, _, _ := strings.Cut(server, "?")
	s, _, _ = strings.Cut(s, "#")
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			rest = rest[at+1:]
		}
		s = scheme + "://" + rest
	}
	return s
}

// loopback reports whether host is this machine's loopback.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// noRedirect refuses redirects: a redirect could carry the token to
// another host, and the API never answers with one.
func noRedirect(req *http.Request, _ []*http.Request) error {
	return fmt.Errorf("server redirected to %s: the API does not redirect", req.URL.Redacted())
}

// Server returns the server as given to New.
func (c *Client) Server() string { return c.server }

// request describes one call of the API.
type request struct {
	method, path string
	query        url.Values
	body         any           // encoded as JSON when not nil
	timeout      time.Duration // 0: requestTimeout; < 0: none
	accept       string
	lastID       string // Last-Event-ID: resume a stream after it
	// key is the change's idempotency key: with one, a request whose
	// answer is lost, or that the server could not carry out for now,
	// is sent again (see send).
	key string
}

// rateRetries is how many times a request the server refused for its
// rate (429, nothing done) is sent again, after the wait it asks for.
const rateRetries = 3

// send makes a request and returns the response when its status is 2xx;
// any other status is an *Error, a transport failure an
// *UnreachableError. The caller closes the body. A request refused for
// the identity's rate is sent again after the server's Retry-After. A
// change with an idempotency key is sent again, for up to keyRetry,
// while the server cannot be reached or answers 502, 503 or 504: the
// key makes a repeat safe. When it may have reached the server and no
// attempt told, the error is an *UnknownOutcomeError.
func (c *Client) send(ctx context.Context, r request) (*http.Response, context.CancelFunc, error) {
	var deadline time.Time
	delay, uncertain, rated := keyRetryFirst, false, 0
	for {
		resp, cancel, err := c.sendOnce(ctx, r)
		var e *Error
		switch {
		case err == nil:
			return resp, cancel, nil
		case errors.As(err, &e) && e.Status == http.StatusTooManyRequests && rated < rateRetries:
			rated++
			if !sleep(ctx, e.RetryAfter) {
				return nil, nil, err
			}
			continue
		case r.key == "" || !transient(err):
			// With a key, the answer to a repeat is the answer: a
			// first attempt that took effect is replayed.
			return nil, nil, err
		}
		uncertain = uncertain || maybeSent(err)
		if deadline.IsZero() {
			deadline = time.Now().Add(c.keyRetry)
		}
		if time.Now().Add(delay).After(deadline) || !sleep(ctx, delay) {
			if uncertain {
				return nil, nil, &UnknownOutcomeError{Server: c.server, Err: err}
			}
			return nil, nil, err
		}
		delay = min(2*delay, keyRetryMax)
	}
}

// How a change with an idempotency key is repeated: for up to keyRetry,
// waiting from keyRetryFirst, doubling up to keyRetryMax.
const (
	keyRetry      = 30 * time.Second
	keyRetryFirst = 200 * time.Millisecond
	keyRetryMax   = 3 * time.Second
)

// transient is a failure worth repeating a keyed change for: the server
// not reached, or answering that it cannot for now.
func transient(err error) bool {
	var ue *UnreachableError
	var e *Error
	switch {
	case errors.As(err, &ue):
		return true
	case errors.As(err, &e):
		return e.Status == http.StatusServiceUnavailable || e.Status == http.StatusBadGateway || e.Status == http.StatusGatewayTimeout
	}
	return false
}

// maybeSent says whether a failed attempt may have reached the server:
// anything but a connection never made, or the server's "unavailable"
// (which changed nothing).
func maybeSent(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.API.Code != api.CodeUnavailable
	}
	var oe *net.OpError
	return !(errors.As(err, &oe) && oe.Op == "dial")
}

// sendOnce makes a request once (see send).
func (c *Client) sendOnce(ctx context.Context, r request) (*http.Response, context.CancelFunc, error) {
	cancel := context.CancelFunc(func() {})
	var err error
	switch {
	case r.timeout == 0:
		ctx, cancel = context.WithTimeout(ctx, requestTimeout)
	case r.timeout > 0:
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
	}
	u := *c.base
	u.RawPath = r.path // escaped: a run id cannot add a path segment
	if u.Path, err = url.PathUnescape(r.path); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("request %s: %w", r.path, err)
	}
	u.RawQuery = r.query.Encode()
	var body io.Reader
	if r.body != nil {
		b, merr := json.Marshal(r.body)
		if merr != nil {
			cancel()
			return nil, nil, fmt.Errorf("encode request: %w", merr)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("request %s %s: %w", r.method, r.path, err)
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", cmp(r.accept, "application/json"))
	req.Header.Set("User-Agent", "agentctl")
	if r.lastID != "" {
		req.Header.Set("Last-Event-ID", r.lastID)
	}
	if r.key != "" {
		req.Header.Set(api.IdempotencyKey, r.key)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		cancel()
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return nil, nil, err
		}
		return nil, nil, &UnreachableError{Server: c.server, Err: unwrapURL(err)}
	}
	if resp.StatusCode/100 != 2 {
		defer cancel()
		defer resp.Body.Close()
		return nil, nil, c.hinted(readError(resp))
	}
	return resp, cancel, nil
}

// hinted words a refusal of the client's credentials (401) as the CLI's
// user sets them: AGENTCTL_TOKEN.
func (c *Client) hinted(err error) error {
	var e *Error
	if !errors.As(err, &e) || e.API.Code != api.CodeUnauthenticated {
		return err
	}
	switch {
	case strings.HasPrefix(c.server, "unix:"): // no token goes there
	case c.token == "":
		e.API.Hint = "set AGENTCTL_TOKEN to a token from agentctl token create (the server's administrator makes them), or connect to the server's socket (--server unix:PATH)"
	default:
		e.API.Hint = "AGENTCTL_TOKEN is not a valid token: mistyped, expired or revoked (agentctl token list shows yours); ask the server's administrator for a new one"
	}
	return err
}

// do makes a request and decodes a 2xx answer's JSON into out (when not
// nil); it returns the status.
func (c *Client) do(ctx context.Context, r request, out any) (int, error) {
	resp, cancel, err := c.send(ctx, r)
	if err != nil {
		return 0, err
	}
	defer cancel()
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
		return resp.StatusCode, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, &UnreachableError{Server: c.server, Err: err}
	}
	// The server may indent its answer; the JSON a run carries (a call's
	// args, a result) is compact, as the engine stores and prints it.
	var buf bytes.Buffer
	if err = json.Compact(&buf, b); err == nil {
		err = json.Unmarshal(buf.Bytes(), out)
	}
	if err != nil {
		return 0, fmt.Errorf("read the answer of %s %s from %s: %w", r.method, r.path, c.server, err)
	}
	return resp.StatusCode, nil
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// unwrapURL drops the *url.Error wrapper, whose message repeats the
// method and URL.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// readError turns an answer that is not 2xx into an *Error: its error
// object, or one made from the status when the body is not one (a proxy's
// page).
func readError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &Error{Status: resp.StatusCode}
	if resp.StatusCode == http.StatusTooManyRequests {
		e.RetryAfter = time.Second
		if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n >= 0 {
			e.RetryAfter = min(time.Duration(n)*time.Second, maxRetryAfter)
		}
	}
	var body api.ErrorBody
	if json.Unmarshal(b, &body) == nil && body.Error.Code != "" && body.Error.Message != "" {
		e.API = body.Error
		return e
	}
	e.API = api.Error{Code: api.CodeOf(resp.StatusCode), Message: fmt.Sprintf("the server answered %s", resp.Status)}
	return e
}
