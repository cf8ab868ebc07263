// Package tracing configures OpenTelemetry tracing from the standard
// environment variables, and only from them: OTEL_EXPORTER_OTLP_ENDPOINT
// (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER,
// OTEL_TRACES_EXPORTER and OTEL_SDK_DISABLED, with the exporter's
// timeout, compression and certificate variables (each also in its
// OTEL_EXPORTER_OTLP_TRACES_ form). Spans are exported over OTLP/HTTP
// (protobuf). Tracing is off unless an endpoint is set.
package tracing

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of agentctl's spans.
const Scope = "github.com/agentctl/agentctl"

// Off reports whether the environment leaves tracing off, and why not
// when it asks for something agentctl cannot do (an exporter other than
// otlp, a protocol other than http/protobuf).
func Off(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return true, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return true, nil
	case "", "otlp":
	default:
		return true, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: agentctl exports traces with otlp (or none)", exp)
	}
	if getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		return true, nil
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return true, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: agentctl exports OTLP over http/protobuf only", proto)
	}
	return false, nil
}

// Setup returns the tracer the environment configures and the function
// that exports what is left and stops it (call it before the process
// exits); a nil tracer and a no-op stop when tracing is off. version is
// the service.version resource attribute; the service is "agentctl"
// unless OTEL_SERVICE_NAME says otherwise.
func Setup(ctx context.Context, getenv func(string) string, version string) (trace.Tracer, func(context.Context) error, error) {
	nop := func(context.Context) error { return nil }
	off, err := Off(getenv)
	if err != nil || off {
		return nil, nop, err
	}
	c, err := newClient(getenv) // endpoint, headers, timeout, compression and TLS
	if err != nil {
		return nil, nop, err
	}
	exp, err := otlptrace.New(ctx, c)
	if err != nil {
		return nil, nop, fmt.Errorf("traces: %w", err)
	}
	base := resource.NewSchemaless(attribute.String("service.name", "agentctl"), attribute.String("service.version", version))
	env, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, nop, fmt.Errorf("traces: resource: %w", err)
	}
	res, err := resource.Merge(base, env)
	if err != nil {
		return nil, nop, fmt.Errorf("traces: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp.Tracer(Scope, trace.WithInstrumentationVersion(version)), tp.Shutdown, nil
}
