package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/agentctl/agentctl/internal/wait"
)

// Defaults for model calls.
const (
	DefaultRetries = 3
	DefaultTimeout = 2 * time.Minute
	maxBackoff     = 30 * time.Second
	maxRetryAfter  = 2 * time.Minute
)

// retrying is an http.RoundTripper that retries a request on 429, 5xx
// and network errors, with exponential backoff and full jitter, honouring
// Retry-After. A cancelled request is never retried.
type retrying struct {
	base    http.RoundTripper
	retries int
}

// newClient returns an HTTP client for a model endpoint: a timeout per
// attempt and bounded retries.
func newClient(retries int, timeout time.Duration) *http.Client {
	if retries < 0 {
		retries = DefaultRetries
	}
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	return &http.Client{Timeout: timeout, Transport: &retrying{base: http.DefaultTransport, retries: retries}, CheckRedirect: sameOrigin}
}

// sameOrigin follows a redirect only to the origin (scheme, host and
// port) of the first request: a model's endpoint that redirects
// elsewhere would take its key there (Go keeps Authorization when only
// the port differs).
func sameOrigin(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	switch {
	case len(via) >= 10:
		return errors.New("stopped after 10 redirects")
	case req.URL.Scheme != first.Scheme || req.URL.Host != first.Host:
		return fmt.Errorf("a redirect to %s://%s refused: a model's requests stay on %s://%s", req.URL.Scheme, req.URL.Host, first.Scheme, first.Host)
	}
	return nil
}

func (t *retrying) RoundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		r := req
		if attempt > 0 {
			r = req.Clone(req.Context())
			if req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				r.Body = body
			}
		}
		resp, err := t.base.RoundTrip(r)
		retry := err != nil || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		if !retry || attempt >= t.retries || (req.Body != nil && req.GetBody == nil) {
			return resp, err
		}
		if cerr := req.Context().Err(); cerr != nil {
			// Cancelled after an attempt that would be retried: the
			// caller gave up, so it gets the cancellation, whichever
			// of the answer and the cancel came first.
			if resp != nil {
				resp.Body.Close()
			}
			return nil, cerr
		}
		wait := backoff(attempt)
		if resp != nil {
			if d, ok := retryAfter(resp.Header.Get("Retry-After")); ok {
				wait = d
			}
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
		}
		if err := sleep(req.Context(), wait); err != nil {
			return nil, err
		}
	}
}

// backoff is the wait before retry attempt+1: up to 500ms·2^attempt,
// capped, with full jitter.
func backoff(attempt int) time.Duration {
	d := min(500*time.Millisecond<<attempt, maxBackoff)
	return time.Duration(rand.Int64N(int64(d) + 1))
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return min(time.Duration(s)*time.Second, maxRetryAfter), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(time.Until(t), 0), maxRetryAfter), true
	}
	return 0, false
}

func sleep(ctx context.Context, d time.Duration) error { return wait.For(ctx, d) }
