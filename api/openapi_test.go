package api_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/api/apitest"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/server"
)

// doc is the document as plain JSON, for what the validator does not
// check: which properties a schema names.
type doc struct {
	OpenAPI    string `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage
	Components struct {
		Schemas map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
			Additional *bool                      `json:"additionalProperties"`
		} `json:"schemas"`
	} `json:"components"`
}

func load(t *testing.T) doc {
	t.Helper()
	var d doc
	if err := json.Unmarshal(api.OpenAPI(), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDocumentValidates(t *testing.T) {
	c := apitest.New(t)
	for _, m := range c.Document() {
		t.Error(m)
	}
	if v := load(t).OpenAPI; !strings.HasPrefix(v, "3.1.") {
		t.Errorf("openapi %q, want 3.1", v)
	}
}

// TestRoutes: every route of the contract is described.
func TestRoutes(t *testing.T) {
	d := load(t)
	for _, r := range []string{
		"GET /v1/runs", "POST /v1/runs", "GET /v1/runs/{id}",
		"POST /v1/runs/{id}/approve", "POST /v1/runs/{id}/decline", "POST /v1/runs/{id}/resume",
		"POST /v1/runs/{id}/retry", "POST /v1/runs/{id}/resolve", "POST /v1/runs/{id}/continue", "POST /v1/runs/{id}/send",
		"GET /v1/approvals", "GET /v1/runs/{id}/events", "GET /v1/events", "GET /v1/whoami", "GET /v1/openapi.json",
		"GET /v1/audit", "GET /v1/status",
		"GET /healthz", "GET /readyz", "GET /metrics",
	} {
		method, path, _ := strings.Cut(r, " ")
		if d.Paths[path][strings.ToLower(method)] == nil {
			t.Errorf("%s is not described", r)
		}
	}
}

// schemaTypes pairs each schema with the Go type that marshals to it.
var schemaTypes = map[string]any{
	"Run":             engine.RunView{},
	"Pending":         engine.PendingView{},
	"RunDetail":       engine.RunDetail{},
	"Call":            engine.CallView{},
	"Decision":        engine.DecisionView{},
	"Usage":           store.Usage{},
	"Gate":            store.Gate{},
	"CallPreview":     store.Preview{},
	"PreviewDrift":    store.Drift{},
	"Reason":          store.Reason{},
	"RunList":         api.List[*engine.RunView]{},
	"Approval":        api.Approval{},
	"ApprovalList":    api.List[api.Approval]{},
	"StartRequest":    api.StartRequest{},
	"DecisionRequest": api.DecisionRequest{},
	"SendRequest":     api.SendRequest{},
	"Whoami":          api.Whoami{},
	"AuditEntry":      api.AuditEntry{},
	"AuditList":       api.List[api.AuditEntry]{},
	"Status":          api.Status{},
	"StatusWorker":    api.StatusWorker{},
	"Error":           api.Error{},
	"ErrorDetail":     api.Detail{},
	"ErrorBody":       api.ErrorBody{},
	"RunNode":         treeNode{},
	"RunDetailTree":   withTree{},
}

// treeNode and withTree are how the server nests a tree (?tree=true).
type treeNode struct {
	engine.RunView
	ParentCall string     `json:"parentCall,omitempty"`
	Children   []treeNode `json:"children"`
}

type withTree struct {
	*engine.RunDetail
	Children []treeNode `json:"children"`
}

// TestSchemasNameTheFields: each schema names exactly the JSON fields of
// its Go type, requires exactly those that are never left out, and
// allows no others.
func TestSchemasNameTheFields(t *testing.T) {
	d := load(t)
	for name, v := range schemaTypes {
		s, ok := d.Components.Schemas[name]
		if !ok {
			t.Errorf("no schema %s", name)
			continue
		}
		var fields, required []string
		jsonFields(reflect.TypeOf(v), &fields, &required)
		var props []string
		for p := range s.Properties {
			props = append(props, p)
		}
		slices.Sort(fields)
		slices.Sort(props)
		slices.Sort(required)
		req := slices.Sorted(slices.Values(s.Required))
		if !slices.Equal(fields, props) {
			t.Errorf("%s: the schema names %v; %T has %v", name, props, v, fields)
		}
		if !slices.Equal(required, req) {
			t.Errorf("%s: the schema requires %v; %T always has %v", name, req, v, required)
		}
		if s.Additional == nil || *s.Additional {
			t.Errorf("%s: want additionalProperties: false", name)
		}
	}
}

// jsonFields lists the JSON names of a struct's fields, those of
// embedded structs included, and those without omitempty.
func jsonFields(t reflect.Type, fields, required *[]string) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && tag == "" {
			jsonFields(f.Type, fields, required)
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		*fields = append(*fields, name)
		if !strings.Contains(opts, "omitempty") {
			*required = append(*required, name)
		}
	}
}

// TestValuesMatchSchemas marshals a value of each type with every field
// set and validates it against its schema with the validator.
func TestValuesMatchSchemas(t *testing.T) {
	c := apitest.New(t)
	for name, v := range schemaTypes {
		p := reflect.New(reflect.TypeOf(v))
		fill(p.Elem(), "", 0)
		for _, m := range c.Value(name, p.Interface()) {
			t.Errorf("%s: %s", name, m)
		}
		// Zero values too (empty strings, no optional fields), as a
		// run that has just started shows them: only what the engine
		// never leaves nil is filled.
		z := reflect.New(reflect.TypeOf(v))
		fill(z.Elem(), "", -1)
		for _, m := range c.Value(name, z.Interface()) {
			t.Errorf("%s, least filled: %s", name, m)
		}
	}
}

// TestSchemasAreStrict: the validator refuses a field the schema does not
// name, a value outside an enumeration, and a missing required field.
func TestSchemasAreStrict(t *testing.T) {
	c := apitest.New(t)
	p := reflect.New(reflect.TypeOf(engine.RunDetail{}))
	fill(p.Elem(), "", 0)
	b, _ := json.Marshal(p.Interface())
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, tc := range []struct {
		name   string
		change func(map[string]any)
	}{
		{"an extra field", func(m map[string]any) { m["runID"] = "x" }},
		{"an extra field in a call", func(m map[string]any) { m["calls"].([]any)[0].(map[string]any)["output"] = "x" }},
		{"a wrong status", func(m map[string]any) { m["status"] = "done" }},
		{"a missing field", func(m map[string]any) { delete(m, "pending") }},
		{"a wrong type", func(m map[string]any) { m["usage"].(map[string]any)["modelCalls"] = "3" }},
	} {
		var bad map[string]any
		json.Unmarshal(b, &bad)
		tc.change(bad)
		if len(c.Value("RunDetail", bad)) == 0 {
			t.Errorf("%s: the schema lets it through", tc.name)
		}
	}
	// A run with children is no plain run, and the other way round:
	// ?tree=true's oneOf is decided.
	if len(c.Value("RunDetailTree", m)) == 0 {
		t.Error("a run without children passes as a tree")
	}
	m["children"] = []any{}
	if len(c.Value("RunDetail", m)) == 0 {
		t.Error("a run with children passes as a plain run")
	}
}

// at is the time every filled value holds.
var at = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// enums are values of the plain strings the schema enumerates, by JSON
// name.
var enums = map[string]string{"kind": "approval", "via": "token", "roles": "approver", "code": "conflict", "verdict": "required"}

// fill sets every field of v to a valid value; depth -1 fills only what
// the engine never leaves empty (slices it makes, times).
func fill(v reflect.Value, name string, depth int) {
	least := depth < 0
	switch x := v.Addr().Interface().(type) {
	case *store.Status:
		*x = store.Suspended
		return
	case *store.CallStatus:
		*x = store.CallSucceeded
		return
	case *store.Kind:
		*x = store.KindApproval
		return
	case *store.Action:
		*x = store.Approve
		return
	case *store.ReasonKind:
		*x = store.ReasonCondition
		return
	case *time.Time:
		*x = at
		return
	case *json.RawMessage:
		if name == "gate" && !least {
			*x = json.RawMessage(`{"verdict":"required","reasons":[{"kind":"condition","detail":"input.service == 'db'"}]}`)
		} else if name == "escalation" && !least {
			*x = json.RawMessage(`{"steps":[{"step":1,"after":"15m","kind":"remind","due":"2026-12-05T09:15:00Z","at":"2026-12-05T09:15:01Z"}]}`)
		} else if name == "action" && !least {
			*x = json.RawMessage(`{"kind":"exec","summary":"exec restart {{ input.service }}","template":{"command":["restart","{{ input.service }}"]},"rendered":{"command":["restart","nginx"]}}`)
		} else if (name == "preview" || name == "previewDrift") && !least {
			pv := `{"status":"ok","output":"+replicas: 3","digest":"sha256:ab","argsDigest":"cd","at":"2026-12-05T09:15:00Z"}`
			if name == "previewDrift" {
				pv = `{"cause":"output","approved":` + pv + `}`
			}
			*x = json.RawMessage(pv)
		} else if !least || name == "args" || name == "result" {
			*x = json.RawMessage(`{"service":"nginx"}`)
		}
		return
	}
	switch v.Kind() {
	case reflect.String:
		if e, ok := enums[name]; ok {
			v.SetString(e)
		} else if !least {
			v.SetString("x-" + name)
		}
	case reflect.Int:
		if !least {
			v.SetInt(2)
		}
	case reflect.Bool:
		v.SetBool(!least)
	case reflect.Pointer:
		if least || depth > 2 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), name, depth+1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 0, 1))
		if least || depth > 2 {
			return
		}
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, name, depth+1)
		v.Set(reflect.Append(v, e))
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && f.Type.Kind() == reflect.Pointer {
				v.Field(i).Set(reflect.New(f.Type.Elem())) // an embedded run is always there
				fill(v.Field(i).Elem(), n, depth)
				continue
			}
			fill(v.Field(i), n, depth+sign(depth))
		}
	}
}

// sign keeps depth -1 (least filled) as it is and counts others up.
func sign(depth int) int {
	if depth < 0 {
		return 0
	}
	return 1
}

// TestEnums: the values the document enumerates are the Go constants.
func TestEnums(t *testing.T) {
	var d any
	if err := json.Unmarshal(api.OpenAPI(), &d); err != nil {
		t.Fatal(err)
	}
	statuses := []store.Status{store.Queued, store.Running, store.Suspended, store.Stalled, store.Completed, store.Failed}
	for ptr, want := range map[string][]string{
		"/components/schemas/Run/properties/status":         strs(statuses...),
		"/components/parameters/status/schema":              strs(statuses...),
		"/components/schemas/Call/properties/status":        strs(store.CallPending, store.CallApproved, store.CallDeclined, store.CallExecuting, store.CallSucceeded, store.CallFailed, store.CallInterrupted),
		"/components/schemas/Approval/properties/kind":      strs(store.KindApproval, store.KindSuspend, store.KindInterrupted),
		"/components/schemas/Pending/properties/kind":       strs(store.KindApproval, store.KindSuspend, store.KindInterrupted),
		"/components/parameters/kind/schema":                strs(store.KindApproval, store.KindSuspend, store.KindInterrupted),
		"/components/schemas/Decision/properties/action":    strs(store.Approve, store.Decline, store.Resume, store.Expire, store.Grant, store.Retry, store.Resolve, store.Refused),
		"/components/schemas/Gate/properties/verdict":       strs(store.GateRequired, store.GateGranted, store.GateFree, store.GateDelegation, store.GateDenied),
		"/components/schemas/Reason/properties/kind":        strs(store.ReasonTool, store.ReasonCondition, store.ReasonServer, store.ReasonFailed, store.ReasonAgent, store.ReasonRun, store.ReasonFalse, store.ReasonReadOnly, store.ReasonSubAgent, store.ReasonText, store.ReasonUpload, store.ReasonRule),
		"/components/schemas/Error/properties/code":         {api.CodeInvalid, api.CodeUnauthenticated, api.CodeForbidden, api.CodeNotFound, api.CodeConflict, api.CodeTooLarge, api.CodeRateLimited, api.CodeUnavailable, api.CodeOutcomeUnknown, api.CodeKeyReused},
		"/components/schemas/Event/properties/type":         strs(engine.EventTextDelta, engine.EventToolCall, engine.EventToolCallApproval, engine.EventToolCallSuspended, engine.EventToolResult, engine.EventStepFinish, engine.EventFinish, engine.EventError, engine.EventStalled, engine.EventDecision, engine.EventRuleMatched, engine.EventRuleShadow, engine.EventPreviewDrift),
		"/components/schemas/Whoami/properties/via":         {server.ViaSocket, server.ViaToken, server.ViaProxy},
		"/components/schemas/Decision/properties/via":       {server.ViaSocket, server.ViaToken, server.ViaProxy, server.ViaSlack},
		"/components/schemas/Whoami/properties/roles/items": {"reader", "runner", "author", "approver", "delegate"},
	} {
		node := d
		for _, k := range strings.Split(ptr[1:], "/") {
			m, _ := node.(map[string]any)
			node = m[k]
		}
		m, _ := node.(map[string]any)
		enum, ok := m["enum"].([]any)
		if !ok {
			t.Errorf("%s: no enum", ptr)
			continue
		}
		var got []string
		for _, v := range enum {
			got = append(got, v.(string))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the document enumerates %v, want %v", ptr, got, want)
		}
	}
}

func strs[S ~string](vs ...S) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// TestAPIReferenceUpToDate keeps docs/reference/api.md the reference
// the OpenAPI document makes. make docs rewrites it
// (AGENTCTL_UPDATE_DOCS=1).
func TestAPIReferenceUpToDate(t *testing.T) {
	want, err := api.Reference()
	if err != nil {
		t.Fatal(err)
	}
	const path = "../docs/reference/api.md"
	if os.Getenv("AGENTCTL_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("docs/reference/api.md is not the reference api/openapi.json makes: run make docs")
	}
}
