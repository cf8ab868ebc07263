package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentctl/agentctl/toolkits/redact"
)

// The Standard Webhooks headers of a request.
const (
	HeaderID        = "webhook-id"        // the message's ID, the same on every attempt
	HeaderTimestamp = "webhook-timestamp" // the attempt's time, Unix seconds
	HeaderSignature = "webhook-signature" // space-separated "v1,<base64 HMAC-SHA256>"
)

// Webhook keys and sending.
const (
	// SecretPrefix starts a serialized webhook secret: whsec_ and the key
	// in base64.
	SecretPrefix = "whsec_"
	// MinKeySize and MaxKeySize bound a key's length in bytes: Standard
	// Webhooks says a symmetric secret is between 24 bytes (192 bits) and
	// 64 bytes (512 bits).
	MinKeySize = 24
	MaxKeySize = 64
	// DefaultTolerance is how far a webhook-timestamp may be from now when
	// Verify is given no tolerance.
	DefaultTolerance = 5 * time.Minute
	// DefaultTimeout bounds an HTTP attempt whose context has no deadline.
	DefaultTimeout = 10 * time.Second

	maxResponse   = 64 << 10       // bytes of a response read
	maxRetryAfter = 24 * time.Hour // a longer Retry-After is cut to this
	userAgent     = "agentctl"
)

// Errors of secrets, Verify and Send. Match them with errors.Is; the
// error's text adds which header or what was wrong, never a secret.
var (
	ErrInvalidSecret = errors.New("invalid webhook secret")
	ErrMissingHeader = errors.New("missing webhook header")
	ErrInvalidHeader = errors.New("invalid webhook header")
	ErrTooOld        = errors.New("webhook timestamp too old")
	ErrTooNew        = errors.New("webhook timestamp too new")
	ErrNoMatch       = errors.New("no matching webhook signature")
	// ErrPermanent matches a *SendError another attempt cannot fix: the
	// target refused the notification or is misconfigured.
	ErrPermanent = errors.New("permanent failure")
)

// ParseSecret returns the key of a serialized webhook secret: "whsec_"
// then the key in standard base64 (padded or not). Spaces and line
// breaks around s are ignored. The key must be MinKeySize to MaxKeySize
// bytes long, as Standard Webhooks says; a shorter or longer one, an
// empty one, a missing prefix and bad base64 are refused with an error
// wrapping ErrInvalidSecret that never holds s.
func ParseSecret(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(strings.TrimSpace(s), SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: it does not start with %s", ErrInvalidSecret, SecretPrefix)
	}
	if b64 == "" {
		return nil, fmt.Errorf("%w: nothing follows %s", ErrInvalidSecret, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil && !strings.Contains(b64, "=") {
		key, err = base64.RawStdEncoding.DecodeString(b64)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: what follows %s is not base64", ErrInvalidSecret, SecretPrefix)
	}
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return key, nil
}

func checkKey(key []byte) error {
	if len(key) < MinKeySize || len(key) > MaxKeySize {
		return fmt.Errorf("%w: the key is %d bytes long, want %d to %d", ErrInvalidSecret, len(key), MinKeySize, MaxKeySize)
	}
	return nil
}

// Sign returns the Standard Webhooks signature of one attempt, the value
// of webhook-signature: "v1," and the base64 HMAC-SHA256, under key, of
// "id.ts.body" with ts in Unix seconds.
func Sign(key []byte, id string, ts time.Time, body []byte) string {
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, id, ts.Unix(), body))
}

func mac(key []byte, id string, ts int64, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write(strconv.AppendInt(nil, ts, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Verify checks a received webhook: body exactly as received, h its
// headers. It returns nil when webhook-id is set (at most 256 bytes,
// no '.', space or control character), webhook-timestamp is Unix
// seconds within tolerance of now (DefaultTolerance when tolerance is 0
// or less), and one of the space-separated signatures of webhook-signature is a "v1"
// signature of id, timestamp and body under key (compared in constant
// time; other versions are skipped). Otherwise the error wraps one of
// ErrMissingHeader, ErrInvalidHeader, ErrTooOld, ErrTooNew, ErrNoMatch,
// or ErrInvalidSecret for an empty key.
//
// Verify does not remember IDs: a receiver that must act once per
// notification keeps the webhook-id values it has seen (a retry carries
// the same ID, a fresh timestamp and signature).
func Verify(key []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if len(key) == 0 {
		return fmt.Errorf("%w: the key is empty", ErrInvalidSecret)
	}
	id, err := header(h, HeaderID)
	if err != nil {
		return err
	}
	if !validID(id) {
		return fmt.Errorf("%w: %s is too long or holds '.', a space or a control character", ErrInvalidHeader, HeaderID)
	}
	text, err := header(h, HeaderTimestamp)
	if err != nil {
		return err
	}
	ts, ok := parseUnix(text)
	if !ok {
		return fmt.Errorf("%w: %s is not a time in Unix seconds", ErrInvalidHeader, HeaderTimestamp)
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	at := time.Unix(ts, 0)
	if d := now.Sub(at); d > tolerance {
		return fmt.Errorf("%w: %s before now, past the tolerance of %s", ErrTooOld, d.Truncate(time.Second), tolerance)
	}
	if d := at.Sub(now); d > tolerance {
		return fmt.Errorf("%w: %s after now, past the tolerance of %s", ErrTooNew, d.Truncate(time.Second), tolerance)
	}
	sigs := strings.Fields(strings.Join(h.Values(HeaderSignature), " "))
	if len(sigs) == 0 {
		return fmt.Errorf("%w: %s", ErrMissingHeader, HeaderSignature)
	}
	want := mac(key, id, ts, body)
	for _, s := range sigs {
		version, sig, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		if got, err := base64.StdEncoding.DecodeString(sig); err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("%w: none of %d signatures is a v1 signature of this body under the key", ErrNoMatch, len(sigs))
}

// header returns the one value of header name.
func header(h http.Header, name string) (string, error) {
	vs := h.Values(name)
	switch {
	case len(vs) == 0 || vs[0] == "":
		return "", fmt.Errorf("%w: %s", ErrMissingHeader, name)
	case len(vs) > 1:
		return "", fmt.Errorf("%w: more than one %s", ErrInvalidHeader, name)
	}
	return vs[0], nil
}

// parseUnix reads decimal Unix seconds: digits only, no sign.
func parseUnix(s string) (int64, bool) {
	if s == "" || len(s) > 18 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// validID reports whether id may be a webhook-id: not empty, at most 256
// bytes, no '.' (it delimits the signed content), space or control
// character, valid UTF-8.
func validID(id string) bool {
	if id == "" || len(id) > 256 {
		return false
	}
	for _, r := range id {
		if r == '.' || r == unicode.ReplacementChar || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// Webhook is a Standard Webhooks endpoint.
type Webhook struct {
	URL string // http or https; may hold userinfo or a query: neither is ever printed
	Key []byte // the signing key, as ParseSecret returns it
	// Client makes the request; its redirect policy is never used. nil:
	// a client that uses no proxy and refuses, at connect time, an
	// internal address (AddressKind) the URL's host resolves to, unless
	// AllowPrivate. A Client given is used as it is: where it connects
	// is its own transport's business.
	Client       *http.Client
	AllowPrivate bool
	// Name is how errors name the target, such as [env.HOOK_URL] for a
	// URL that is a secret: then no part of the URL is ever printed.
	// Empty: scheme://host/path.
	Name string
}

// Send makes one attempt to deliver m: a POST of m.Body() with
// Content-Type application/json, User-Agent agentctl, webhook-id m.ID,
// webhook-timestamp now and a webhook-signature computed for this
// attempt. The attempt ends with ctx, or after DefaultTimeout when ctx
// has no deadline.
//
// It returns nil on a 2xx answer; else a *SendError. Permanent (and
// matching ErrPermanent): 410 Gone (the receiver asks to stop), any other
// 4xx but 408 and 429, a redirect (never followed; the error says the
// host it pointed to), a bad URL, key or message ID. Worth retrying: 408,
// 429, 5xx, network errors and timeouts, with RetryAfter set from a
// Retry-After header (seconds or an HTTP date, relative to now). A
// connection refused for its address (an *AddressError, matching
// ErrPrivateAddress) is permanent. At most 64 KiB of the response are
// read, and an error shows at most ExcerptMax bytes of them. Errors name
// the target as scheme://host/path, never its userinfo or query, the key
// or the body sent.
func (w Webhook) Send(ctx context.Context, m *Message, now time.Time) error {
	if m == nil {
		return w.SendJSON(ctx, "", nil, now)
	}
	return w.SendJSON(ctx, m.ID, m.Body(), now)
}

// SendJSON makes one attempt to deliver body, a JSON document, with
// webhook-id id, as Send delivers a message's (nil body: no message).
// The audit chain's signed heads go this way.
func (w Webhook) SendJSON(ctx context.Context, id string, body []byte, now time.Time) error {
	u, err := parseTarget(w.URL)
	if err != nil {
		return &SendError{Target: "webhook", Permanent: true, Err: err}
	}
	name, hide := "webhook "+safeURL(u, true), hidden(u, false)
	if w.Name != "" {
		name, hide = "webhook "+w.Name, append(hidden(u, true), u.Host, u.Hostname())
	}
	switch {
	case body == nil:
		return &SendError{Target: name, Permanent: true, Err: errors.New("no message")}
	case !validID(id):
		return &SendError{Target: name, Permanent: true, Err: errors.New("the message ID is empty, too long, or holds '.', a space or a control character")}
	}
	if err := checkKey(w.Key); err != nil {
		return &SendError{Target: name, Permanent: true, Err: err}
	}
	h := http.Header{}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(HeaderSignature, Sign(w.Key, id, now, body))
	return post(ctx, sendClient(w.Client, w.AllowPrivate), u, h, body, now, name, hide)
}

// sendClient returns c, or when nil the guarded client of one attempt.
func sendClient(c *http.Client, allowPrivate bool) *http.Client {
	if c != nil {
		return c
	}
	return guardedClient(allowPrivate, nil)
}

// SendError is a failed attempt of a Send. Its text names the target
// (scheme://host/path of a webhook, the host of a Slack URL, the program
// of a command) and what happened, never a secret.
type SendError struct {
	Target string // e.g. "webhook https://example.com/hook"
	Status int    // the HTTP status answered, 0 when none
	// Permanent is set when another attempt cannot succeed: errors.Is(err,
	// ErrPermanent) reports it.
	Permanent bool
	// RetryAfter is how long the target asked to wait (Retry-After), at
	// most 24 hours; 0 when it did not ask.
	RetryAfter time.Duration
	Err        error // what happened; never nil from this package
	// answer is what the target answered (a response's body, a
	// command's output), its URL's secrets cut: never shown whole.
	answer string
}

// ExcerptMax is the most bytes of a target's answer (the body of a
// response that is not 2xx, a failed command's output) that a
// SendError's text shows.
const ExcerptMax = 200

// excerptWindow is how much of an answer is cut of secrets before its
// excerpt is taken.
const excerptWindow = 4 << 10

// Error says the target, what happened, an excerpt of the target's
// answer and any wait asked for.
func (e *SendError) Error() string { return e.Redacted(nil) }

// Redacted returns Error's text with r's secrets cut out of it (nil
// cuts none): the target's answer is cut before its excerpt is taken,
// on one line, valid UTF-8, at most ExcerptMax bytes, so that a secret
// straddling the excerpt's end leaves nothing of itself.
func (e *SendError) Redacted(r *redact.Redactor) string {
	what := "failed"
	if e.Err != nil {
		what = r.Cut(e.Err.Error())
	}
	s := r.Cut(e.Target) + ": " + what
	if x := excerpt(e.answer, r); x != "" {
		s += ": " + x
	}
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return s
}

// excerpt returns the start of answer with r's secrets cut, on one line
// (runs of spaces, line breaks and control characters as one space),
// valid UTF-8, at most ExcerptMax bytes, "…" marking a cut.
func excerpt(answer string, r *redact.Redactor) string {
	if answer == "" {
		return ""
	}
	cut, _ := r.Prefix(answer, excerptWindow)
	return clip(oneLine(cut, ExcerptMax), ExcerptMax)
}

// clip returns s, valid UTF-8, cut to at most n bytes at a character's
// boundary, "…" marking a cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	end := max(n-len(mark), 0)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + mark
}

// Unwrap returns Err.
func (e *SendError) Unwrap() error { return e.Err }

// Is reports whether target is ErrPermanent and the failure is permanent.
func (e *SendError) Is(target error) bool { return target == ErrPermanent && e.Permanent }

// parseTarget parses an HTTP target's URL. Its errors never hold the URL.
func parseTarget(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil:
		return nil, errors.New("the URL does not parse")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New("the URL's scheme must be http or https")
	case u.Host == "":
		return nil, errors.New("the URL has no host")
	}
	return u, nil
}

// safeURL returns scheme://host of u, and its path when withPath.
func safeURL(u *url.URL, withPath bool) string {
	s := &url.URL{Scheme: u.Scheme, Host: u.Host}
	if withPath {
		s.Path, s.RawPath = u.Path, u.RawPath
	}
	return oneLine(s.String(), 300)
}

// hidden lists the parts of u that may be secrets, to cut out of any
// text printed: userinfo, the query and its values, and with path the
// path and its longer segments.
func hidden(u *url.URL, path bool) []string {
	var out []string
	add := func(s string) {
		if len(s) >= 4 {
			out = append(out, s)
		}
	}
	if u.User != nil {
		add(u.User.String())
		add(u.User.Username())
		p, _ := u.User.Password()
		add(p)
	}
	add(u.RawQuery)
	for _, vs := range u.Query() {
		for _, v := range vs {
			add(v)
		}
	}
	if path {
		add(u.EscapedPath())
		for seg := range strings.SplitSeq(u.Path, "/") {
			if len(seg) >= 8 {
				add(seg)
			}
		}
	}
	return out
}

// scrub replaces every secret in s with "…".
func scrub(s string, secrets []string) string {
	for _, x := range secrets {
		s = strings.ReplaceAll(s, x, "…")
	}
	return s
}

// scrubbed is an error whose text had secrets cut out; it still unwraps
// to the original, for errors.Is.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// post makes one POST of body to u with header h, without following
// redirects, and classifies the answer. name is how errors call the
// target; secrets are cut out of any text they print.
func post(ctx context.Context, client *http.Client, u *url.URL, h http.Header, body []byte, now time.Time, name string, secrets []string) error {
	h.Set("Content-Type", "application/json")
	resp, text, err := exchange(ctx, client, u, h, body, maxResponse, name, secrets)
	if err != nil {
		return err
	}
	return classify(resp, text, now, name, secrets)
}

// exchange makes one POST of body to u with header h (and User-Agent
// agentctl), without following redirects, and returns the response with
// at most limit bytes of its body, already read and closed. The attempt
// ends with ctx, or after DefaultTimeout when ctx has no deadline. Its
// errors are *SendError worth retrying (a network error, a timeout) or
// permanent (a request that cannot be made), named name, with secrets
// cut out.
func exchange(ctx context.Context, client *http.Client, u *url.URL, h http.Header, body []byte, limit int64, name string, secrets []string) (*http.Response, []byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, &SendError{Target: name, Permanent: true, Err: errors.New("the request cannot be made from the URL")}
	}
	h.Set("User-Agent", userAgent)
	req.Header = h
	resp, err := noRedirects(client).Do(req)
	if err != nil {
		if e := refusal(err, name); e != nil {
			return nil, nil, e
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text holds the whole URL
		}
		return nil, nil, &SendError{Target: name, Err: &scrubbed{msg: "post: " + scrub(err.Error(), secrets), err: err}}
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, limit))
	return resp, text, nil
}

// refusal returns the permanent *SendError named name of err when it
// is a connection refused for its address, else nil.
func refusal(err error, name string) *SendError {
	var ae *AddressError
	if !errors.As(err, &ae) {
		return nil
	}
	return &SendError{Target: name, Permanent: true,
		Err: fmt.Errorf("refused: %w; set allowPrivate: true beside webhook: (not inside it) to allow it", ae)}
}

// noRedirects returns a copy of c (a default client when nil) that
// returns a redirect as the response instead of following it.
func noRedirects(c *http.Client) *http.Client {
	var cc http.Client
	if c != nil {
		cc = *c
	}
	cc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cc
}

// classify turns a response into Send's result: nil for 2xx, else a
// *SendError with the status, whether it is permanent, the Retry-After
// asked for, and the response's text (shown as an excerpt).
func classify(resp *http.Response, text []byte, now time.Time, name string, secrets []string) error {
	code := resp.StatusCode
	if code >= 200 && code <= 299 {
		return nil
	}
	e := &SendError{Target: name, Status: code}
	what := "answered " + strconv.Itoa(code)
	if st := http.StatusText(code); st != "" {
		what += " " + st
	}
	switch {
	case code >= 300 && code <= 399:
		e.Permanent = true
		where := "nowhere (no Location)"
		if loc, err := resp.Location(); err == nil && loc.Host != "" {
			where = oneLine(loc.Host, 200)
		}
		e.Err = fmt.Errorf("%s, a redirect to %s: redirects are not followed; configure the URL it points to", what, where)
		return e
	case code == http.StatusGone:
		e.Permanent = true
		what += ": the receiver asks to stop sending"
	case code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500 || code < 200:
		e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), now)
	default:
		e.Permanent = true
	}
	e.Err = errors.New(what)
	e.answer = scrub(string(text), secrets)
	return e
}

// retryAfter reads a Retry-After header, seconds or an HTTP date (as of
// now), capped at maxRetryAfter; 0 when absent, past or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, int64(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter)
	}
	return 0
}
