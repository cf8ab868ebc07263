package notify

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testSigningSecret = "8f742231b10e8888abcd99yyyzzz85a5"

// Slack's worked example
// (https://api.slack.com/authentication/verifying-requests-from-slack).
const (
	slackExampleBody = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	slackExampleTS   = 1531420618
	slackExampleSig  = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
)

func slackHeaders(ts, sig string) http.Header {
	h := http.Header{}
	if ts != "" {
		h.Set("X-Slack-Request-Timestamp", ts)
	}
	if sig != "" {
		h.Set("X-Slack-Signature", sig)
	}
	return h
}

func TestSignSlackExample(t *testing.T) {
	at := time.Unix(slackExampleTS, 0)
	ts, sig := SignSlack(testSigningSecret, at, []byte(slackExampleBody))
	if ts != "1531420618" || sig != slackExampleSig {
		t.Fatalf("SignSlack = %s, %s; want Slack's example %s", ts, sig, slackExampleSig)
	}
	if err := VerifySlack(testSigningSecret, slackHeaders(ts, sig), []byte(slackExampleBody), at.Add(time.Minute)); err != nil {
		t.Errorf("VerifySlack of Slack's example: %v", err)
	}
}

func TestVerifySlack(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`payload=%7B%22type%22%3A%22block_actions%22%7D`)
	ts, sig := SignSlack(testSigningSecret, now, body)
	flipped := append([]byte(nil), body...)
	flipped[3] ^= 1
	oldTS, oldSig := SignSlack(testSigningSecret, now.Add(-6*time.Minute), body)
	newTS, newSig := SignSlack(testSigningSecret, now.Add(6*time.Minute), body)
	edgeTS, edgeSig := SignSlack(testSigningSecret, now.Add(-5*time.Minute), body)
	_, otherSig := SignSlack("another-secret", now, body)
	twoSigs := slackHeaders(ts, sig)
	twoSigs.Add("X-Slack-Signature", sig)
	tests := []struct {
		name   string
		secret string
		h      http.Header
		body   []byte
		want   error // nil: accepted
	}{
		{"good", testSigningSecret, slackHeaders(ts, sig), body, nil},
		{"5 minutes old", testSigningSecret, slackHeaders(edgeTS, edgeSig), body, nil},
		{"upper-case hex", testSigningSecret, slackHeaders(ts, "v0="+strings.ToUpper(strings.TrimPrefix(sig, "v0="))), body, nil},
		{"wrong secret", "another-secret", slackHeaders(ts, sig), body, ErrBadSignature},
		{"signed by another secret", testSigningSecret, slackHeaders(ts, otherSig), body, ErrBadSignature},
		{"flipped body byte", testSigningSecret, slackHeaders(ts, sig), flipped, ErrBadSignature},
		{"empty body", testSigningSecret, slackHeaders(ts, sig), nil, ErrBadSignature},
		{"no signature", testSigningSecret, slackHeaders(ts, ""), body, ErrBadSignature},
		{"no timestamp", testSigningSecret, slackHeaders("", sig), body, ErrBadSignature},
		{"no headers", testSigningSecret, http.Header{}, body, ErrBadSignature},
		{"nil headers", testSigningSecret, nil, body, ErrBadSignature},
		{"two signatures", testSigningSecret, twoSigs, body, ErrBadSignature},
		{"garbled timestamp", testSigningSecret, slackHeaders("17e8", sig), body, ErrBadSignature},
		{"negative timestamp", testSigningSecret, slackHeaders("-1", sig), body, ErrBadSignature},
		{"huge timestamp", testSigningSecret, slackHeaders(strings.Repeat("9", 40), sig), body, ErrBadSignature},
		{"other timestamp", testSigningSecret, slackHeaders(strconv.FormatInt(now.Unix()+60, 10), sig), body, ErrBadSignature},
		{"v1 signature", testSigningSecret, slackHeaders(ts, "v1="+strings.TrimPrefix(sig, "v0=")), body, ErrBadSignature},
		{"not hex", testSigningSecret, slackHeaders(ts, "v0=zz"+sig[5:]), body, ErrBadSignature},
		{"short", testSigningSecret, slackHeaders(ts, sig[:len(sig)-2]), body, ErrBadSignature},
		{"empty secret", "", slackHeaders(ts, sig), body, ErrBadSignature},
		{"6 minutes old", testSigningSecret, slackHeaders(oldTS, oldSig), body, ErrStaleRequest},
		{"6 minutes ahead", testSigningSecret, slackHeaders(newTS, newSig), body, ErrStaleRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifySlack(tt.secret, tt.h, tt.body, now)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("VerifySlack = %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("VerifySlack = %v, want %v", err, tt.want)
			}
			other := ErrStaleRequest
			if tt.want == ErrStaleRequest {
				other = ErrBadSignature
			}
			if errors.Is(err, other) {
				t.Errorf("VerifySlack = %v, also %v", err, other)
			}
			if msg := err.Error(); strings.Contains(msg, testSigningSecret) || strings.Contains(msg, string(body)) || strings.Contains(msg, sig[3:]) {
				t.Errorf("error holds a secret or the body: %s", msg)
			}
		})
	}
}
