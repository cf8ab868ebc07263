package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers Slack signs a request to an app's endpoints with
// (https://api.slack.com/authentication/verifying-requests-from-slack).
const (
	SlackTimestampHeader = "X-Slack-Request-Timestamp" // the request's time, Unix seconds
	SlackSignatureHeader = "X-Slack-Signature"         // "v0=" and the hex HMAC-SHA256
	// SlackTolerance is how far X-Slack-Request-Timestamp may be from now,
	// in either direction.
	SlackTolerance = 5 * time.Minute
)

// Errors of VerifySlack. Match them with errors.Is; the error's text
// adds what was wrong, never the signing secret or the body.
var (
	// ErrBadSignature: a signing header is missing or garbled, or the
	// signature is not the body's under the signing secret.
	ErrBadSignature = errors.New("bad slack signature")
	// ErrStaleRequest: the request's timestamp is more than
	// SlackTolerance before or after now (a replay, or a skewed clock).
	ErrStaleRequest = errors.New("stale slack request")
)

// VerifySlack checks that a request to a Slack app's endpoint came from
// Slack: body exactly as received, h its headers. It returns nil when
// X-Slack-Request-Timestamp is one value of decimal Unix seconds within
// SlackTolerance of now, and X-Slack-Signature is one value "v0=" and
// the hex HMAC-SHA256, under signingSecret, of "v0:", the timestamp as
// written, ":" and body (compared in constant time). Otherwise the error
// wraps ErrStaleRequest (the timestamp is too far from now) or
// ErrBadSignature (anything else, an empty signingSecret included).
//
// VerifySlack does not remember requests: within the tolerance a
// request may be replayed, so what it triggers must be safe to repeat.
func VerifySlack(signingSecret string, h http.Header, body []byte, now time.Time) error {
	if signingSecret == "" {
		return fmt.Errorf("%w: no signing secret is configured", ErrBadSignature)
	}
	text, err := slackHeader(h, SlackTimestampHeader)
	if err != nil {
		return err
	}
	ts, ok := parseUnix(text)
	if !ok {
		return fmt.Errorf("%w: %s is not a time in Unix seconds", ErrBadSignature, SlackTimestampHeader)
	}
	at := time.Unix(ts, 0)
	if d := now.Sub(at); d > SlackTolerance {
		return fmt.Errorf("%w: its timestamp is %s before now, past the tolerance of %s", ErrStaleRequest, d.Truncate(time.Second), SlackTolerance)
	}
	if d := at.Sub(now); d > SlackTolerance {
		return fmt.Errorf("%w: its timestamp is %s after now, past the tolerance of %s", ErrStaleRequest, d.Truncate(time.Second), SlackTolerance)
	}
	sig, err := slackHeader(h, SlackSignatureHeader)
	if err != nil {
		return err
	}
	hexSig, ok := strings.CutPrefix(sig, "v0=")
	if !ok {
		return fmt.Errorf("%w: %s is not a v0= signature", ErrBadSignature, SlackSignatureHeader)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("%w: %s is not a hex SHA-256 HMAC", ErrBadSignature, SlackSignatureHeader)
	}
	if !hmac.Equal(got, slackMAC(signingSecret, text, body)) {
		return fmt.Errorf("%w: the signature is not this body's under the signing secret", ErrBadSignature)
	}
	return nil
}

// SignSlack returns the headers Slack would send with body at ts under
// signingSecret: the values of X-Slack-Request-Timestamp and
// X-Slack-Signature. It is for tests and test tools.
func SignSlack(signingSecret string, ts time.Time, body []byte) (timestampHeader, signatureHeader string) {
	timestampHeader = strconv.FormatInt(ts.Unix(), 10)
	return timestampHeader, "v0=" + hex.EncodeToString(slackMAC(signingSecret, timestampHeader, body))
}

// slackMAC is the HMAC-SHA256 under secret of "v0:ts:body".
func slackMAC(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("v0:"))
	m.Write([]byte(ts))
	m.Write([]byte{':'})
	m.Write(body)
	return m.Sum(nil)
}

// slackHeader returns the one value of header name, or an error wrapping
// ErrBadSignature.
func slackHeader(h http.Header, name string) (string, error) {
	vs := h.Values(name)
	switch {
	case len(vs) == 0 || vs[0] == "":
		return "", fmt.Errorf("%w: no %s", ErrBadSignature, name)
	case len(vs) > 1:
		return "", fmt.Errorf("%w: more than one %s", ErrBadSignature, name)
	}
	return vs[0], nil
}
