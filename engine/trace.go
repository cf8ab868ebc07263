package engine

import (
	"context"
	"errors"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/toolkits"
)

// Spans follow OpenTelemetry's semantic conventions for generative AI
// (https://opentelemetry.io/docs/specs/semconv/gen-ai/): invoke_agent
// {agent} per advance of a run, chat {model} per model call,
// execute_tool {tool} per tool call; agentctl's own attributes are under
// agentctl.*. A decision is a span of its own ("approve {tool}", ...),
// linked to the trace the run started in, which the run keeps in its
// checkpoint (state.Trace): the human's part joins the trace days later,
// from another process. No content (prompts, arguments, results) is
// recorded unless Config.TraceContent, and then as stored: redacted.

// GenAI attribute keys.
const (
	attrOperation    = attribute.Key("gen_ai.operation.name")
	attrProvider     = attribute.Key("gen_ai.provider.name")
	attrAgentName    = attribute.Key("gen_ai.agent.name")
	attrConversation = attribute.Key("gen_ai.conversation.id")
	attrReqModel     = attribute.Key("gen_ai.request.model")
	attrRespModel    = attribute.Key("gen_ai.response.model")
	attrTemperature  = attribute.Key("gen_ai.request.temperature")
	attrMaxTokens    = attribute.Key("gen_ai.request.max_tokens")
	attrInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	attrToolName     = attribute.Key("gen_ai.tool.name")
	attrToolCallID   = attribute.Key("gen_ai.tool.call.id")
	attrToolType     = attribute.Key("gen_ai.tool.type")
	attrToolArgs     = attribute.Key("gen_ai.tool.call.arguments")
	attrToolResult   = attribute.Key("gen_ai.tool.call.result")
	attrOutputText   = attribute.Key("gen_ai.output.messages")
	attrErrorType    = attribute.Key("error.type")

	attrRunID      = attribute.Key("agentctl.run.id")
	attrRootID     = attribute.Key("agentctl.run.root_id")
	attrRunPath    = attribute.Key("agentctl.run.path")
	attrRunStatus  = attribute.Key("agentctl.run.status")
	attrToolkit    = attribute.Key("agentctl.tool.toolkit")
	attrOutcome    = attribute.Key("agentctl.tool.outcome")
	attrAction     = attribute.Key("agentctl.decision.action")
	attrBy         = attribute.Key("agentctl.decision.by")
	attrOSUser     = attribute.Key("agentctl.decision.os_user")
	attrVia        = attribute.Key("agentctl.decision.via")
	attrCallIDs    = attribute.Key("agentctl.calls.id")
	attrCallTools  = attribute.Key("agentctl.calls.tool")
	attrCallKinds  = attribute.Key("agentctl.calls.kind")
	eventSuspended = "agentctl.suspended"
)

// off is the span of every start when no tracer is configured: nothing
// is built for it (no attributes, no state decoded), as a run's every
// step passes here.
var off trace.Span = noop.Span{}

// traceparent is a span context as W3C Trace Context writes it, "" for
// none.
func traceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c["traceparent"]
}

// spanContextOf reads a traceparent; invalid when it is none.
func spanContextOf(tp string) trace.SpanContext {
	if tp == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	return trace.SpanContextFromContext(ctx)
}

// linkTo links a new span to the trace a run started in, unless the span
// is in that trace already.
func linkTo(ctx context.Context, tp string) []trace.SpanStartOption {
	sc := spanContextOf(tp)
	if !sc.IsValid() || sc.TraceID() == trace.SpanContextFromContext(ctx).TraceID() {
		return nil
	}
	return []trace.SpanStartOption{trace.WithLinks(trace.Link{SpanContext: sc})}
}

// runAttrs are a run's attributes.
func runAttrs(r *store.Run) []attribute.KeyValue {
	path := r.Path
	if len(path) == 0 {
		path = []string{r.Agent}
	}
	return []attribute.KeyValue{attrRunID.String(r.ID), attrRootID.String(r.RootID), attrRunPath.StringSlice(path),
		attrConversation.String(r.RootID)}
}

// startAgent starts the span of one advance of run r: invoke_agent
// {agent}, linked to the trace the run started in; the run's first
// advance is where its trace starts, kept in st.
func (e *Engine) startAgent(ctx context.Context, r *store.Run, st *state) (context.Context, trace.Span) {
	if e.tracer == nil {
		return ctx, off
	}
	opts := append(linkTo(ctx, st.Trace), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(append(runAttrs(r), attrOperation.String("invoke_agent"), attrAgentName.String(r.Agent))...))
	ctx, span := e.tracer.Start(ctx, "invoke_agent "+r.Agent, opts...)
	if st.Trace == "" {
		st.Trace = traceparent(span.SpanContext())
	}
	return ctx, span
}

// endAgent ends an advance's span with what became of the run.
func endAgent(span trace.Span, v *RunView, err error) {
	switch {
	case err != nil:
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(attrErrorType.String(errorType(err)))
	case v != nil:
		span.SetAttributes(attrRunStatus.String(string(v.Status)))
		if v.Status == store.Failed {
			span.SetStatus(codes.Error, v.Error)
		}
	}
	span.End()
}

// errorType names an error's class for error.type.
func errorType(err error) string {
	var ie *InterruptedError
	switch {
	case errors.As(err, &ie):
		return "interrupted"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, errStopped):
		return "interrupted"
	}
	return "_OTHER"
}

// suspended records on the advance's span that the run now waits for a
// human, and for which calls.
func suspended(ctx context.Context, calls []*store.Call) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	var ids, tools, kinds []string
	for _, c := range calls {
		if c.Status == store.CallPending || c.Status == store.CallInterrupted {
			ids, tools, kinds = append(ids, c.ID), append(tools, c.Tool), append(kinds, string(c.Kind))
		}
	}
	span.AddEvent(eventSuspended, trace.WithAttributes(attrCallIDs.StringSlice(ids), attrCallTools.StringSlice(tools), attrCallKinds.StringSlice(kinds)))
}

// providerName is gen_ai.provider.name for a spec's provider.
func providerName(p string) string {
	switch p {
	case spec.ProviderGoogleAI:
		return "gcp.gemini"
	case spec.ProviderMistral:
		return "mistral_ai"
	case spec.ProviderScripted, spec.ProviderReplay:
		return "agentctl." + p
	}
	return p
}

// startChat starts the span of a model call.
func (e *Engine) startChat(ctx context.Context, s *spec.Model) (context.Context, trace.Span) {
	if e.tracer == nil {
		return ctx, off
	}
	name := s.Model
	if name == "" {
		name = s.Name
	}
	attrs := []attribute.KeyValue{attrOperation.String("chat"), attrProvider.String(providerName(s.Provider)), attrReqModel.String(name)}
	if s.Temperature != nil {
		attrs = append(attrs, attrTemperature.Float64(*s.Temperature))
	}
	if s.MaxTokens > 0 {
		attrs = append(attrs, attrMaxTokens.Int(s.MaxTokens))
	}
	return e.tracer.Start(ctx, "chat "+name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// endChat ends a model call's span; its text only with TraceContent, as
// the run keeps it: resp comes with the secrets cut (cutModel).
func (e *Engine) endChat(span trace.Span, s *spec.Model, resp *model.Response, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "the model call failed")
		span.SetAttributes(attrErrorType.String("_OTHER"))
	}
	if resp != nil {
		name := s.Model
		if name == "" {
			name = s.Name
		}
		span.SetAttributes(attrRespModel.String(name), attrInputTokens.Int(resp.Usage.InputTokens), attrOutputTokens.Int(resp.Usage.OutputTokens))
		if e.traceContent && resp.Text != "" {
			span.SetAttributes(attrOutputText.String(resp.Text))
		}
	}
	span.End()
}

// startTool starts the span of a tool call of agent a (a delegation's
// too: its child run's spans nest under it).
func (e *Engine) startTool(ctx context.Context, c *store.Call, a *agentNode) (context.Context, trace.Span) {
	if e.tracer == nil {
		return ctx, off
	}
	toolkit := "agent"
	if d := a.decl(c.Tool); d != nil {
		toolkit = d.Kind()
	}
	attrs := []attribute.KeyValue{attrOperation.String("execute_tool"), attrToolName.String(c.Tool), attrToolCallID.String(c.ID),
		attrToolType.String("function"), attrToolkit.String(toolkit)}
	return e.tracer.Start(ctx, "execute_tool "+c.Tool, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// traceArgs records a call's arguments on its span, with TraceContent,
// the values of the tool's secrets cut out (a model may write one in).
func (e *Engine) traceArgs(ctx context.Context, c *store.Call, secrets []string) {
	if !e.traceContent {
		return
	}
	trace.SpanFromContext(ctx).SetAttributes(attrToolArgs.String(redact(string(c.Args), secrets, toolkits.EnvOf(secrets))))
}

// endTool ends a tool call's span with how the call came out.
func (e *Engine) endTool(span trace.Span, c *store.Call, err error) {
	outcome := string(c.Status)
	if err != nil && outcome == string(store.CallExecuting) {
		outcome = string(store.CallInterrupted)
	}
	span.SetAttributes(attrOutcome.String(outcome))
	if c.Status == store.CallFailed || err != nil {
		span.SetStatus(codes.Error, "the tool call "+outcome)
		span.SetAttributes(attrErrorType.String(outcome))
	}
	if e.traceContent && c.Result != "" {
		span.SetAttributes(attrToolResult.String(c.Result)) // as stored: secrets cut out
	}
	span.End()
}

// startDecision starts the span of a human's decision on calls of run r
// (root root), linked to the trace the root started in.
func (e *Engine) startDecision(ctx context.Context, root *store.Run, targets []*store.Call, d Decision) (context.Context, trace.Span) {
	if e.tracer == nil {
		return ctx, off // and the root's state is not decoded for a link
	}
	tp := ""
	if st, err := decodeState(root); err == nil {
		tp = st.Trace
	}
	tools := make([]string, 0, len(targets))
	ids := make([]string, 0, len(targets))
	for _, c := range targets {
		ids = append(ids, c.ID)
		if !slices.Contains(tools, c.Tool) {
			tools = append(tools, c.Tool)
		}
	}
	name := string(d.Action)
	if len(tools) == 1 {
		name += " " + tools[0]
	}
	by := d.By
	if by == "" {
		by = d.OSUser
	}
	attrs := append(runAttrs(root), attrAction.String(string(d.Action)), attrBy.String(by), attrOSUser.String(d.OSUser),
		attrCallIDs.StringSlice(ids), attrCallTools.StringSlice(tools))
	if via := d.Auth.via(); via != "" {
		attrs = append(attrs, attrVia.String(via))
	}
	opts := append(linkTo(ctx, tp), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return e.tracer.Start(ctx, name, opts...)
}

// endDecision ends a decision's span: refused, conflicting or recorded.
func endDecision(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		switch {
		case errors.Is(err, store.ErrForbidden):
			span.SetAttributes(attrErrorType.String("refused"))
		case errors.Is(err, store.ErrConflict):
			span.SetAttributes(attrErrorType.String("conflict"))
		default:
			span.SetAttributes(attrErrorType.String(errorType(err)))
		}
	}
	span.End()
}

// working tells Config.Busy that a call starts, and returns what to call
// as it ends.
func (e *Engine) working(what string) func() {
	if e.busy == nil {
		return func() {}
	}
	return e.busy(what)
}
