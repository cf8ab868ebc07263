package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/internal/tracing"
)

// tracer is the process's tracer, set up on first use from the OTEL_*
// environment (docs/tracing.md): nil when tracing is off. Its spans are
// exported when the process ends (a.stopTracing).
type tracer struct {
	once  sync.Once
	t     trace.Tracer
	stop  func(context.Context) error
	err   error
	noted sync.Once
}

// traced adds the process's tracer to the configuration of an engine
// that advances runs (a command of transitions, serve, worker; one that
// only reads exports nothing, and reads the OTEL_* variables not at
// all); a tracing environment agentctl cannot honour is an error in the
// environment (exit 2).
func (a *app) traced(ctx context.Context, cfg engine.Config) (engine.Config, error) {
	name := a.cmdPath[strings.LastIndexByte(a.cmdPath, ' ')+1:]
	if !slices.Contains(transitions, name) && name != "serve" && name != "worker" {
		return cfg, nil
	}
	a.tracing.once.Do(func() {
		if off, err := tracing.Off(os.Getenv); off {
			a.tracing.err = err
			return
		}
		otel.SetErrorHandler(otel.ErrorHandlerFunc(a.traceError))
		a.tracing.t, a.tracing.stop, a.tracing.err = tracing.Setup(context.WithoutCancel(ctx), os.Getenv, moduleVersion())
	})
	if a.tracing.err != nil {
		return cfg, inputErr(fmt.Errorf("traces: %w", a.tracing.err))
	}
	cfg.Tracer, cfg.TraceContent = a.tracing.t, os.Getenv("AGENTCTL_TRACE_CONTENT") == "1"
	return cfg, nil
}

// traceError says once, on stderr, that spans could not be exported:
// the command's outcome stands.
func (a *app) traceError(err error) {
	a.tracing.noted.Do(func() {
		fmt.Fprintf(a.stderr, "agentctl: note: traces not exported: %s\n", oneLine(err.Error(), 300))
	})
}

// stopTracing exports the spans left, for up to 5 seconds.
func (a *app) stopTracing() {
	if a.tracing.stop == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.tracing.stop(ctx); err != nil && !errors.Is(err, context.Canceled) {
		a.traceError(err)
	}
}

// moduleVersion is agentctl's module version, from the build info.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
