package tracing

import (
	"compress/gzip"
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestEndpoint(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "http://c:4318/v1/traces"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c/otlp/"}, "https://c/otlp/v1/traces"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/x"}, "http://t:1/x"},
	} {
		u, err := endpoint(env(tc.env))
		if err != nil || u.String() != tc.want {
			t.Errorf("%v: got %v, %v; want %s", tc.env, u, err, tc.want)
		}
	}
	for _, bad := range []string{"c:4318", "ftp://c", "http://", "::"} {
		if _, err := endpoint(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": bad})); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_ENDPOINT") {
			t.Errorf("%q: got %v, want an error naming the variable", bad, err)
		}
	}
}

func TestClientConfig(t *testing.T) {
	base := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}
	with := func(k, v string) func(string) string {
		m := map[string]string{k: v}
		for a, b := range base {
			m[a] = b
		}
		return env(m)
	}
	c, err := newClient(with("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%3Dcr%2Cet, x-b = two "))
	if err != nil {
		t.Fatal(err)
	}
	if c.headers.Get("Api-Key") != "s=cr,et" || c.headers.Get("X-B") != "two" {
		t.Errorf("headers %v", c.headers)
	}
	for _, tc := range []struct{ k, v, want string }{
		{"OTEL_EXPORTER_OTLP_HEADERS", "api-key=ok,secretvalue", "OTEL_EXPORTER_OTLP_HEADERS: entry 2 is not key=value"},
		{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "soon", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT=soon"},
		{"OTEL_EXPORTER_OTLP_COMPRESSION", "zstd", "want gzip or none"},
		{"OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem", "OTEL_EXPORTER_OTLP_CERTIFICATE"},
		{"OTEL_EXPORTER_OTLP_CLIENT_KEY", "/k.pem", "go together"},
	} {
		_, err := newClient(with(tc.k, tc.v))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secretvalue") {
			t.Errorf("%s=%s: got %v, want %q", tc.k, tc.v, err, tc.want)
		}
	}
}

// collector is a loopback OTLP/HTTP receiver answering each request with
// the next status of its script (200 once they are spent).
type collector struct {
	mu       sync.Mutex
	statuses []int
	bodies   [][]byte
	headers  []http.Header
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		rd = zr
	}
	b, _ := io.ReadAll(rd)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bodies, c.headers = append(c.bodies, b), append(c.headers, r.Header.Clone())
	if len(c.statuses) > 0 {
		st := c.statuses[0]
		c.statuses = c.statuses[1:]
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(st)
		io.WriteString(w, "try later "+r.Header.Get("K")) // a collector that echoes a header
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func spans(name string) []*tracepb.ResourceSpans {
	return []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{
		Scope: &commonpb.InstrumentationScope{Name: Scope},
		Spans: []*tracepb.Span{{Name: name, TraceId: make([]byte, 16), SpanId: make([]byte, 8)}},
	}}}}
}

func TestUpload(t *testing.T) {
	col := &collector{statuses: []int{503}}
	srv := httptest.NewServer(col)
	defer srv.Close()
	c, err := newClient(env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":           srv.URL,
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS":     "x-test=abc",
		"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.UploadTraces(context.Background(), spans("chat m")); err != nil {
		t.Fatal(err)
	}
	if len(col.bodies) != 2 {
		t.Fatalf("%d requests, want 2 (a 503, then the retry)", len(col.bodies))
	}
	var got tracepb.TracesData
	if err := proto.Unmarshal(col.bodies[1], &got); err != nil {
		t.Fatal(err)
	}
	if n := got.ResourceSpans[0].ScopeSpans[0].Spans[0].Name; n != "chat m" {
		t.Errorf("span %q", n)
	}
	h := col.headers[1]
	if h.Get("X-Test") != "abc" || h.Get("Content-Type") != "application/x-protobuf" || h.Get("Content-Encoding") != "gzip" {
		t.Errorf("headers %v", h)
	}
}

func TestUploadRefused(t *testing.T) {
	col := &collector{statuses: []int{400}}
	srv := httptest.NewServer(col)
	at := strings.Replace(srv.URL, "http://", "http://u:pwsecret@", 1) + "/in?api_key=qsecret"
	c, err := newClient(env(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": at, "OTEL_EXPORTER_OTLP_HEADERS": "k=topsecret"}))
	if err != nil {
		t.Fatal(err)
	}
	err = c.UploadTraces(context.Background(), spans("x"))
	if err == nil || !strings.Contains(err.Error(), "post to "+srv.URL+"/in: 400 Bad Request: try later xxxxx") || len(col.bodies) != 1 {
		t.Fatalf("got %v after %d requests; want one 400, not retried, its answer shown", err, len(col.bodies))
	}
	if h := col.headers[0].Get("K"); h != "topsecret" {
		t.Fatalf("header K %q", h)
	}
	for _, secret := range []string{"topsecret", "pwsecret", "qsecret"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows %s: %v", secret, err)
		}
	}
	srv.Close()
	err = c.UploadTraces(context.Background(), spans("x"))
	if err == nil || !strings.Contains(err.Error(), "post to "+srv.URL+"/in: ") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("got %v, want the failed post named, without its secrets", err)
	}
}

// TestUploadDropped: a connection the collector drops fails the export
// at once, not retried.
func TestUploadDropped(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	c, err := newClient(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	c.http.Transport.(*http.Transport).DisableKeepAlives = true
	if err := c.UploadTraces(context.Background(), spans("x")); err == nil {
		t.Fatal("a dropped connection exported")
	}
	mu.Lock()
	defer mu.Unlock()
	if n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}

func TestUploadTimeout(t *testing.T) {
	col := &collector{statuses: []int{503, 503, 503, 503, 503, 503, 503, 503, 503, 503}}
	srv := httptest.NewServer(col)
	defer srv.Close()
	c, err := newClient(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_TIMEOUT": "250"}))
	if err != nil {
		t.Fatal(err)
	}
	err = c.UploadTraces(context.Background(), spans("x"))
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("got %v, want the last 503 once the timeout leaves no time to retry", err)
	}
}

// TestUploadTLS: a collector whose certificate a CA file names is
// trusted; without it, the export fails.
func TestUploadTLS(t *testing.T) {
	col := &collector{}
	srv := httptest.NewTLSServer(col)
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	plain, err := newClient(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.UploadTraces(context.Background(), spans("x")); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("got %v, want an unknown authority refused", err)
	}
	trusted, err := newClient(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": ca}))
	if err != nil {
		t.Fatal(err)
	}
	if err := trusted.UploadTraces(context.Background(), spans("x")); err != nil {
		t.Fatal(err)
	}
	if len(col.bodies) != 1 {
		t.Errorf("%d exports reached the collector, want 1", len(col.bodies))
	}
}
