package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// otlpreceiver starts an OTLP/HTTP trace receiver for a script:
//
//	otlpreceiver NAME
//
// $NAME is its URL (for OTEL_EXPORTER_OTLP_ENDPOINT). Each span it
// receives at /v1/traces is appended to name.log (NAME in lower case)
// as one JSON line: {"name", "traceId", "spanId", "parentSpanId",
// "service", "attrs": {key: value}, "events": [names], "links":
// [traceId/spanId]}, and each request's headers it was asked to show
// (OTEL_EXPORTER_OTLP_HEADERS) as {"header": "k=v"} lines.
func otlpreceiver(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: otlpreceiver NAME")
	}
	logPath := ts.MkAbs(strings.ToLower(args[0]) + ".log")
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
			return
		}
		var lines []string
		if h := r.Header.Get("X-Test-Header"); h != "" {
			lines = append(lines, fmt.Sprintf(`{"header":"x-test-header=%s"}`, h))
		}
		for _, rs := range req.ResourceSpans {
			service := attrsOf(rs.GetResource().GetAttributes())["service.name"]
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					var events, links []string
					for _, ev := range sp.Events {
						events = append(events, ev.Name)
					}
					for _, l := range sp.Links {
						links = append(links, hex.EncodeToString(l.TraceId)+"/"+hex.EncodeToString(l.SpanId))
					}
					b, _ := json.Marshal(map[string]any{"name": sp.Name, "traceId": hex.EncodeToString(sp.TraceId),
						"spanId": hex.EncodeToString(sp.SpanId), "parentSpanId": hex.EncodeToString(sp.ParentSpanId),
						"service": service, "attrs": attrsOf(sp.Attributes), "events": events, "links": links})
					lines = append(lines, string(b))
				}
			}
		}
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			for _, l := range lines {
				fmt.Fprintln(f, l)
			}
			f.Close()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	ts.Defer(srv.Close)
	ts.Setenv(args[0], srv.URL)
}

// attrsOf is OTLP attributes as a map of their values, written out.
func attrsOf(kvs []*commonpb.KeyValue) map[string]any {
	out := map[string]any{}
	for _, kv := range kvs {
		out[kv.Key] = anyValue(kv.Value)
	}
	return out
}

func anyValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.Values {
			out = append(out, anyValue(e))
		}
		return out
	}
	return nil
}
