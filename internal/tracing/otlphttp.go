package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// client posts spans to an OTLP/HTTP endpoint as protobuf: an
// otlptrace.Client. It reads the OTEL_EXPORTER_OTLP_* variables the
// exporter specification lists for OTLP/HTTP itself: the SDK's own
// otlptracehttp links gRPC (a package it shares with the gRPC exporter),
// which cost every agentctl command about 4 ms of start-up and 6 MB of
// binary, traced or not.
type client struct {
	url     *url.URL
	headers http.Header
	gzip    bool
	timeout time.Duration
	http    *http.Client
}

// defaultTimeout is the specification's default export timeout.
const defaultTimeout = 10 * time.Second

// signal returns the traces-specific variable's value if set, else the
// general one's, with the name of the variable it came from.
func signal(getenv func(string) string, suffix string) (string, string) {
	name := "OTEL_EXPORTER_OTLP_TRACES_" + suffix
	if v := strings.TrimSpace(getenv(name)); v != "" {
		return v, name
	}
	name = "OTEL_EXPORTER_OTLP_" + suffix
	return strings.TrimSpace(getenv(name)), name
}

// newClient configures a client from the environment.
func newClient(getenv func(string) string) (*client, error) {
	u, err := endpoint(getenv)
	if err != nil {
		return nil, err
	}
	c := &client{url: u, headers: http.Header{}, timeout: defaultTimeout}
	if err := parseHeaders(getenv, c.headers); err != nil {
		return nil, err
	}
	if v, name := signal(getenv, "TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("%s=%s: want a positive number of milliseconds", name, v)
		}
		c.timeout = time.Duration(ms) * time.Millisecond
	}
	switch v, name := signal(getenv, "COMPRESSION"); v {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		return nil, fmt.Errorf("%s=%s: want gzip or none", name, v)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if tr.TLSClientConfig, err = tlsConfig(getenv); err != nil {
		return nil, err
	}
	c.http = &http.Client{Transport: tr, Timeout: c.timeout}
	return c, nil
}

// endpoint is the traces URL: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it
// is, else OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces added.
func endpoint(getenv func(string) string) (*url.URL, error) {
	raw, name := signal(getenv, "ENDPOINT")
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: want an http:// or https:// URL", name)
	}
	if name == "OTEL_EXPORTER_OTLP_ENDPOINT" {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
		u.RawPath = ""
	}
	return u, nil
}

// where is the endpoint as messages name it: no user, password or query,
// where a key may be.
func (c *client) where() string {
	return c.url.Scheme + "://" + c.url.Host + c.url.EscapedPath()
}

// parseHeaders adds OTEL_EXPORTER_OTLP_HEADERS, then the traces-specific
// ones over them: key=value pairs separated by commas, values
// percent-decoded. An error names the entry, never its value (an API key).
func parseHeaders(getenv func(string) string, h http.Header) error {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		for i, kv := range strings.Split(getenv(name), ",") {
			if strings.TrimSpace(kv) == "" {
				continue
			}
			k, v, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			val, err := url.PathUnescape(strings.TrimSpace(v))
			if !ok || k == "" || err != nil || strings.ContainsAny(k, " \t\r\n:") || strings.ContainsAny(val, "\r\n") {
				return fmt.Errorf("%s: entry %d is not key=value (percent-encoded)", name, i+1)
			}
			h.Set(k, val)
		}
	}
	return nil
}

// tlsConfig reads the certificate variables: a CA bundle to trust, and a
// client certificate and key for mutual TLS; nil when none is set.
func tlsConfig(getenv func(string) string) (*tls.Config, error) {
	ca, caName := signal(getenv, "CERTIFICATE")
	cert, certName := signal(getenv, "CLIENT_CERTIFICATE")
	key, keyName := signal(getenv, "CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caName, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s=%s: no PEM certificate in it", caName, ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("%s and %s go together", certName, keyName)
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", certName, keyName, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// Start does nothing: a connection is made on the first export.
func (c *client) Start(context.Context) error { return nil }

// Stop closes idle connections.
func (c *client) Stop(context.Context) error {
	c.http.CloseIdleConnections()
	return nil
}

// UploadTraces posts one ExportTraceServiceRequest (its one field,
// resource_spans = 1, is TracesData's: the same bytes), retrying what
// the specification calls retryable (429, 502, 503, 504) with growing
// delays, or Retry-After's, until the export's timeout. A collector that
// cannot be reached fails at once: a short-lived command waits for no
// retries.
func (c *client) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	body, err := proto.Marshal(&tracepb.TracesData{ResourceSpans: spans})
	if err != nil {
		return fmt.Errorf("encode spans: %w", err)
	}
	if c.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		if _, err := zw.Write(body); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		body = b.Bytes()
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	delay := 100 * time.Millisecond
	for {
		wait, err := c.post(ctx, body)
		if err == nil || wait < 0 {
			return err
		}
		wait = max(wait, delay)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// post sends body once. A retryable failure comes with the wait the
// server asked for (0 if none); one that is not, with a negative wait.
func (c *client) post(ctx context.Context, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url.String(), bytes.NewReader(body))
	if err != nil {
		return -1, err
	}
	for k, v := range c.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "agentctl")
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return -1, fmt.Errorf("post to %s: %w", c.where(), ctx.Err())
		}
		return -1, fmt.Errorf("post to %s: %w", c.where(), errors.Unwrap(err))
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return 0, nil
	}
	err = fmt.Errorf("post to %s: %s", c.where(), resp.Status)
	if s := strings.TrimSpace(string(msg)); s != "" && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/") {
		for _, vs := range c.headers { // a collector that echoes the request
			for _, v := range vs {
				if len(v) >= 4 {
					s = strings.ReplaceAll(s, v, "xxxxx")
				}
			}
		}
		err = fmt.Errorf("%w: %.200s", err, s)
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return time.Duration(max(secs, 0)) * time.Second, err
	}
	return -1, err
}
