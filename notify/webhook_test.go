package notify

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/toolkits/redact"
)

// The reference test vector of Standard Webhooks: the signing tests of
// its libraries (libraries/go/webhook_test.go TestWebhookSign, and the
// same values in the JavaScript, Python, PHP, Ruby, C# and Java ones).
const (
	specSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTimestamp = 1614265330
	specPayload   = `{"test": 2432232314}`
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func specKey(t *testing.T) []byte {
	t.Helper()
	key, err := ParseSecret(specSecret)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestSignSpecVector(t *testing.T) {
	key := specKey(t)
	if len(key) != 24 {
		t.Errorf("the reference key is %d bytes, want 24", len(key))
	}
	ts := time.Unix(specTimestamp, 0)
	if got := Sign(key, specID, ts, []byte(specPayload)); got != specSignature {
		t.Fatalf("Sign = %s, want %s", got, specSignature)
	}
	h := http.Header{}
	h.Set(HeaderID, specID)
	h.Set(HeaderTimestamp, strconv.Itoa(specTimestamp))
	h.Set(HeaderSignature, specSignature)
	if err := Verify(key, h, []byte(specPayload), ts.Add(4*time.Minute), 0); err != nil {
		t.Errorf("Verify of the reference vector: %v", err)
	}
	if err := Verify(key, h, []byte(specPayload), ts.Add(6*time.Minute), 0); !errors.Is(err, ErrTooOld) {
		t.Errorf("Verify 6 minutes later = %v, want ErrTooOld", err)
	}
}

func TestParseSecret(t *testing.T) {
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xa5}, n)) }
	tests := []struct {
		name, secret string
		size         int // 0: an error
	}{
		{"reference", specSecret, 24},
		{"spaces around", " \t" + specSecret + "\n", 24},
		{"64 bytes", "whsec_" + b64(64), 64},
		{"unpadded", "whsec_" + strings.TrimRight(b64(25), "="), 25},
		{"no prefix", strings.TrimPrefix(specSecret, "whsec_"), 0},
		{"other prefix", "whsk_" + b64(32), 0},
		{"empty", "", 0},
		{"prefix only", "whsec_", 0},
		{"bad base64", "whsec_MfKQ9r8GKYqrTwjUPD8I!PZIo2LaLaSw", 0},
		{"23 bytes", "whsec_" + b64(23), 0},
		{"16 bytes", "whsec_" + b64(16), 0},
		{"65 bytes", "whsec_" + b64(65), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := ParseSecret(tt.secret)
			if tt.size > 0 {
				if err != nil || len(key) != tt.size {
					t.Fatalf("ParseSecret = %d bytes, %v; want %d bytes", len(key), err, tt.size)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalidSecret) {
				t.Fatalf("ParseSecret = %v, want ErrInvalidSecret", err)
			}
			if body := strings.TrimPrefix(strings.TrimSpace(tt.secret), "whsec_"); len(body) > 3 && strings.Contains(err.Error(), body) {
				t.Errorf("the error echoes the secret: %v", err)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	key := specKey(t)
	now := time.Unix(1700000000, 0)
	body := []byte(`{"type":"call.approval"}`)
	good := func() http.Header {
		h := http.Header{}
		h.Set(HeaderID, "ntf_1")
		h.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
		h.Set(HeaderSignature, Sign(key, "ntf_1", now, body))
		return h
	}
	other := Sign(bytes.Repeat([]byte{1}, 32), "ntf_1", now, body)
	tests := []struct {
		name      string
		edit      func(h http.Header)
		now       time.Time
		tolerance time.Duration
		want      error
	}{
		{name: "valid", edit: func(http.Header) {}},
		{name: "missing id", edit: func(h http.Header) { h.Del(HeaderID) }, want: ErrMissingHeader},
		{name: "missing timestamp", edit: func(h http.Header) { h.Del(HeaderTimestamp) }, want: ErrMissingHeader},
		{name: "missing signature", edit: func(h http.Header) { h.Del(HeaderSignature) }, want: ErrMissingHeader},
		{name: "blank signature", edit: func(h http.Header) { h.Set(HeaderSignature, "  ") }, want: ErrMissingHeader},
		{name: "two ids", edit: func(h http.Header) { h.Add(HeaderID, "ntf_2") }, want: ErrInvalidHeader},
		{name: "id with a dot", edit: func(h http.Header) { h.Set(HeaderID, "ntf.1") }, want: ErrInvalidHeader},
		{name: "negative timestamp", edit: func(h http.Header) { h.Set(HeaderTimestamp, "-1700000000") }, want: ErrInvalidHeader},
		{name: "float timestamp", edit: func(h http.Header) { h.Set(HeaderTimestamp, "1700000000.0") }, want: ErrInvalidHeader},
		{name: "text timestamp", edit: func(h http.Header) { h.Set(HeaderTimestamp, "now") }, want: ErrInvalidHeader},
		{name: "huge timestamp", edit: func(h http.Header) { h.Set(HeaderTimestamp, strings.Repeat("9", 40)) }, want: ErrInvalidHeader},
		{name: "too old", edit: func(http.Header) {}, now: now.Add(5*time.Minute + time.Second), want: ErrTooOld},
		{name: "too new", edit: func(http.Header) {}, now: now.Add(-5*time.Minute - time.Second), want: ErrTooNew},
		{name: "within a custom tolerance", edit: func(http.Header) {}, now: now.Add(time.Hour), tolerance: 2 * time.Hour},
		{name: "past a custom tolerance", edit: func(http.Header) {}, now: now.Add(time.Minute), tolerance: time.Second, want: ErrTooOld},
		{name: "other key", edit: func(h http.Header) { h.Set(HeaderSignature, other) }, want: ErrNoMatch},
		{name: "partial", edit: func(h http.Header) { h.Set(HeaderSignature, "v1,") }, want: ErrNoMatch},
		{name: "not base64", edit: func(h http.Header) { h.Set(HeaderSignature, "v1,!!!") }, want: ErrNoMatch},
		{name: "other version", edit: func(h http.Header) {
			h.Set(HeaderSignature, "v1a,"+strings.TrimPrefix(h.Get(HeaderSignature), "v1,"))
		}, want: ErrNoMatch},
		{name: "several, one valid", edit: func(h http.Header) {
			h.Set(HeaderSignature, other+" v2,abc  nocomma "+h.Get(HeaderSignature)+" "+other)
		}},
		{name: "in two headers", edit: func(h http.Header) { h.Add(HeaderSignature, other) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := good()
			tt.edit(h)
			at := now
			if !tt.now.IsZero() {
				at = tt.now
			}
			err := Verify(key, h, body, at, tt.tolerance)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
	if err := Verify(key, good(), append(body, ' '), now, 0); !errors.Is(err, ErrNoMatch) {
		t.Errorf("Verify of a changed body = %v", err)
	}
	if err := Verify(nil, good(), body, now, 0); !errors.Is(err, ErrInvalidSecret) {
		t.Errorf("Verify without a key = %v", err)
	}
}

// recorder is a receiver that keeps each request and answers with the
// next of its answers (the last one once they run out).
type recorder struct {
	mu      sync.Mutex
	reqs    []*http.Request
	bodies  [][]byte
	answers []func(w http.ResponseWriter)
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, r)
	rec.bodies = append(rec.bodies, body)
	answer := rec.answers[min(len(rec.reqs), len(rec.answers))-1]
	rec.mu.Unlock()
	answer(w)
}

func answer(status int, headers map[string]string, text string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		io.WriteString(w, text)
	}
}

func TestWebhookSendSigns(t *testing.T) {
	rec := &recorder{answers: []func(http.ResponseWriter){answer(204, nil, "")}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	key := specKey(t)
	m := sampleApproval()
	t0 := time.Unix(1700000000, 0)
	wh := Webhook{URL: srv.URL + "/hook", Key: key, AllowPrivate: true}
	for i := range 2 {
		if err := wh.Send(context.Background(), m, t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
	}
	if len(rec.reqs) != 2 {
		t.Fatalf("%d requests", len(rec.reqs))
	}
	for i, r := range rec.reqs {
		if r.Method != http.MethodPost || r.URL.Path != "/hook" {
			t.Errorf("request %d: %s %s", i, r.Method, r.URL)
		}
		for name, want := range map[string]string{
			"Content-Type": "application/json", "User-Agent": "agentctl", HeaderID: m.ID,
			HeaderTimestamp: strconv.FormatInt(t0.Add(time.Duration(i)*time.Minute).Unix(), 10),
		} {
			if got := r.Header.Get(name); got != want {
				t.Errorf("request %d: %s = %q, want %q", i, name, got, want)
			}
		}
		if !bytes.Equal(rec.bodies[i], m.Body()) {
			t.Errorf("request %d: body %s", i, rec.bodies[i])
		}
		if err := Verify(key, r.Header, rec.bodies[i], t0.Add(time.Duration(i)*time.Minute), 0); err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	if a, b := rec.reqs[0].Header.Get(HeaderSignature), rec.reqs[1].Header.Get(HeaderSignature); a == b {
		t.Errorf("two attempts share a signature: %s", a)
	}
}

func TestWebhookSendResults(t *testing.T) {
	now := time.Unix(1700000000, 0)
	date := now.Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name      string
		answer    func(http.ResponseWriter)
		status    int
		permanent bool
		wait      time.Duration
		wantText  string
	}{
		{name: "200", answer: answer(200, nil, "ok")},
		{name: "202", answer: answer(202, nil, "")},
		{name: "410", answer: answer(410, nil, "bye"), status: 410, permanent: true, wantText: "answered 410 Gone: the receiver asks to stop sending: bye"},
		{name: "404", answer: answer(404, nil, "no such hook\nmore"), status: 404, permanent: true, wantText: "answered 404 Not Found: no such hook"},
		{name: "401", answer: answer(401, nil, ""), status: 401, permanent: true},
		{name: "408", answer: answer(408, nil, ""), status: 408},
		{name: "500", answer: answer(500, nil, "oops"), status: 500, wantText: "answered 500 Internal Server Error: oops"},
		{name: "503 retry-after seconds", answer: answer(503, map[string]string{"Retry-After": "7"}, ""), status: 503, wait: 7 * time.Second, wantText: "(retry after 7s)"},
		{name: "429 retry-after date", answer: answer(429, map[string]string{"Retry-After": date}, ""), status: 429, wait: 90 * time.Second},
		{name: "429 retry-after huge", answer: answer(429, map[string]string{"Retry-After": "99999999999"}, ""), status: 429, wait: 24 * time.Hour},
		{name: "429 retry-after junk", answer: answer(429, map[string]string{"Retry-After": "soon"}, ""), status: 429},
		{name: "redirect", answer: answer(307, map[string]string{"Location": "https://u:pw@other.example:8443/x?token=SECRET"}, ""), status: 307, permanent: true,
			wantText: "answered 307 Temporary Redirect, a redirect to other.example:8443: redirects are not followed"},
		{name: "echoes secrets", answer: answer(400, nil, "bad token=SECRET from user:pass"), status: 400, permanent: true, wantText: "answered 400 Bad Request: bad …"},
		{name: "huge answer", answer: answer(500, nil, strings.Repeat("x", 1<<20)), status: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{answers: []func(http.ResponseWriter){tt.answer}}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			u := strings.Replace(srv.URL, "http://", "http://user:pass@", 1) + "/hook/path?token=SECRET"
			err := Webhook{URL: u, Key: specKey(t), AllowPrivate: true}.Send(context.Background(), sampleApproval(), now)
			if tt.status == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if got := rec.reqs[0].Header.Get("Authorization"); got == "" {
					t.Errorf("userinfo not sent as basic auth")
				}
				return
			}
			var se *SendError
			if !errors.As(err, &se) || se.Status != tt.status || se.Permanent != tt.permanent || errors.Is(err, ErrPermanent) != tt.permanent || se.RetryAfter != tt.wait {
				t.Fatalf("err = %#v (%v)", err, err)
			}
			if len(rec.reqs) != 1 {
				t.Errorf("%d requests: a redirect was followed?", len(rec.reqs))
			}
			checkSafe(t, err)
			if !strings.HasPrefix(err.Error(), "webhook "+srv.URL+"/hook/path: ") || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error = %q, want the target and %q", err, tt.wantText)
			}
			if len(err.Error()) > 500 {
				t.Errorf("error of %d bytes", len(err.Error()))
			}
		})
	}
}

// checkSafe fails when err's text holds a secret of the tests' URLs, or
// the body of the request.
func checkSafe(t *testing.T, err error) {
	t.Helper()
	for _, secret := range []string{"SECRET", "pass", "user", "restart_service", "nginx", "requireApproval"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error holds %q: %s", secret, err)
		}
	}
}

func TestWebhookSendFailures(t *testing.T) {
	key := specKey(t)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	defer slow.Close()
	defer close(hang)
	secretURL := func(base string) string {
		return strings.Replace(base, "http://", "http://user:pass@", 1) + "/h?token=SECRET"
	}
	noDot := sampleApproval()
	noDot.ID = "ntf.1"
	tests := []struct {
		name      string
		w         Webhook
		m         *Message
		timeout   time.Duration
		permanent bool
		want      string
	}{
		{name: "refused", w: Webhook{URL: secretURL(closed.URL), Key: key, AllowPrivate: true}, want: "post: dial tcp"},
		{name: "timeout", w: Webhook{URL: secretURL(slow.URL), Key: key, AllowPrivate: true}, timeout: 50 * time.Millisecond, want: "post: context deadline exceeded"},
		{name: "bad URL", w: Webhook{URL: "http://user:pass@[::1/%zz?token=SECRET", Key: key}, permanent: true, want: "the URL does not parse"},
		{name: "bad scheme", w: Webhook{URL: "ftp://user:pass@x.example/?token=SECRET", Key: key}, permanent: true, want: "scheme must be http or https"},
		{name: "no host", w: Webhook{URL: "http:///path?token=SECRET", Key: key}, permanent: true, want: "no host"},
		{name: "short key", w: Webhook{URL: secretURL(closed.URL), Key: []byte("short")}, permanent: true, want: "the key is 5 bytes long"},
		{name: "nil message", w: Webhook{URL: secretURL(closed.URL), Key: key, AllowPrivate: true}, m: nil, permanent: true, want: "no message"},
		{name: "dot in ID", w: Webhook{URL: secretURL(closed.URL), Key: key, AllowPrivate: true}, m: noDot, permanent: true, want: "message ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			m := tt.m
			if m == nil && tt.name != "nil message" {
				m = sampleApproval()
			}
			err := tt.w.Send(ctx, m, time.Now())
			var se *SendError
			if !errors.As(err, &se) || se.Permanent != tt.permanent || errors.Is(err, ErrPermanent) != tt.permanent {
				t.Fatalf("err = %#v (%v)", err, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want %q", err, tt.want)
			}
			checkSafe(t, err)
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 15, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"": 0, "0": 0, "-5": 0, "120": 2 * time.Minute, " 3 ": 3 * time.Second, "1.5": 0, "x": 0,
		"Thu, 02 Jan 2025 15:00:30 GMT": 30 * time.Second, "Thu, 02 Jan 2025 14:00:00 GMT": 0,
		"Sat, 01 Jan 2050 00:00:00 GMT": 24 * time.Hour,
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("retryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}

// TestErrorExcerpt: an answer that is not 2xx shows as its status and at
// most ExcerptMax bytes of its body, on one line, valid UTF-8; Redacted
// cuts a secret before the excerpt is cut, so one straddling its end
// leaves nothing of itself.
func TestErrorExcerpt(t *testing.T) {
	const secret = "s3cr3t-value-123456"
	r := redact.New([]string{"TOK"}, map[string]string{"TOK": secret})
	tests := []struct {
		name, body, want string
	}{
		{"straddling secret", strings.Repeat("x", 190) + secret + " and more", strings.Repeat("x", 190) + "[env.TO…"},
		{"megabyte", strings.Repeat("€", 1<<20/3), strings.Repeat("€", 65) + "…"},
		{"control and invalid", "bad\xff\x00 line\r\n\nnext\tline\x1b[31m", "bad\uFFFD line next line [31m"},
		{"indented JSON", "{\n  \"error\": \"invalid signature\"\n}\n", `{ "error": "invalid signature" }`},
		{"blank", " \n\t", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			err := Webhook{URL: srv.URL, Key: specKey(t), AllowPrivate: true}.Send(context.Background(), sampleApproval(), time.Now())
			var se *SendError
			if !errors.As(err, &se) || se.Status != http.StatusBadRequest {
				t.Fatalf("err = %v", err)
			}
			head := "webhook " + srv.URL + ": answered 400 Bad Request"
			want := head
			if tt.want != "" {
				want += ": " + tt.want
			}
			got := se.Redacted(r)
			if got != want {
				t.Errorf("Redacted =\n%q, want\n%q", got, want)
			}
			if x := strings.TrimPrefix(strings.TrimPrefix(got, head), ": "); len(x) > ExcerptMax || !utf8.ValidString(got) || strings.ContainsAny(got, "\n\r\x00") {
				t.Errorf("an excerpt of %d bytes, or not one line of UTF-8: %q", len(x), got)
			}
			if strings.Contains(got, "s3cr") {
				t.Errorf("Redacted holds a prefix of the secret: %q", got)
			}
			if plain := err.Error(); len(plain) > len(head)+2+ExcerptMax || !utf8.ValidString(plain) {
				t.Errorf("Error() = %q", plain)
			}
		})
	}
}

// A webhook whose URL is a secret (${{ env.NAME }}) is named [env.NAME]
// in every error: no part of the URL, its host or path included, is
// printed (the address it was refused for may be), whatever the URL
// holds (found by an attack: a URL with
// userinfo or a query was printed as scheme://host/path).
func TestSecretURLNeverPrinted(t *testing.T) {
	url := "http://u:pw@127.0.0.1:1/hooks/SECRETPATH-abc123?token=Q"
	tg := Target{On: []Type{Approval}, Webhook: &WebhookTarget{URL: "${{ env.W }}", Secret: "${{ env.S }}"}}
	env := map[string]string{"W": url, "S": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	send, err := tg.Resolve(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = send(t.Context(), sampleApproval(), time.Now())
	if err == nil {
		t.Fatal("a loopback address without allowPrivate was delivered to")
	}
	msg := err.Error()
	if !strings.Contains(msg, "[env.W]") {
		t.Errorf("the error does not name the target [env.W]: %s", msg)
	}
	for _, part := range []string{"SECRETPATH", "hooks", "token=Q", "pw"} {
		if strings.Contains(msg, part) {
			t.Errorf("the error shows %q: %s", part, msg)
		}
	}
}
