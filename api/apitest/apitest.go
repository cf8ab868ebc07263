// Package apitest checks HTTP responses against the API's OpenAPI
// document (api.OpenAPI) with a third-party validator, for tests: a
// server's tests record a response of every route and Check each. It is
// for tests only; agentctl itself never links it.
package apitest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/agentctl/agentctl/api"
)

// Checker validates responses against the document. It is safe for
// concurrent use.
type Checker struct {
	mu     sync.Mutex // the validator's caches are not documented as safe for concurrent use
	model  *v3.Document
	v      validator.Validator
	schema schema_validation.SchemaValidator
}

// New loads api.OpenAPI; a document that does not load fails t.
func New(t testing.TB) *Checker {
	t.Helper()
	c, err := Load(api.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Load builds a Checker for an OpenAPI document.
func Load(doc []byte) (*Checker, error) {
	// A tree's children are runs with children: a circular reference
	// through an array, which may be empty, so it ends.
	d, err := libopenapi.NewDocumentWithConfiguration(doc, &datamodel.DocumentConfiguration{IgnoreArrayCircularReferences: true})
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	m, err := d.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("build the OpenAPI document's model: %w", err)
	}
	v, errs := validator.NewValidator(d)
	if len(errs) > 0 {
		return nil, fmt.Errorf("build a validator of the OpenAPI document: %v", errs)
	}
	return &Checker{model: &m.Model, v: v, schema: schema_validation.NewSchemaValidator()}, nil
}

// Document validates the document itself against the OpenAPI
// specification's schema; it returns the validator's messages.
func (c *Checker) Document() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, errs := c.v.ValidateDocument()
	return messages(errs)
}

// Check fails t, with the validator's messages, unless resp (whose body
// was read into body) is what the document says req's operation answers:
// a documented status, its content type and a body that satisfies its
// schema. An event stream's data: lines must each satisfy the Event
// schema.
func (c *Checker) Check(t testing.TB, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	for _, m := range c.Problems(req, resp, body) {
		t.Errorf("%s %s → %d: %s", req.Method, req.URL.Path, resp.StatusCode, m)
	}
}

// Problems returns what is wrong with resp (Check without a test).
func (c *Checker) Problems(req *http.Request, resp *http.Response, body []byte) []string {
	r := *resp
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.Request = req
	c.mu.Lock()
	_, errs := c.v.ValidateHttpResponse(req, &r)
	c.mu.Unlock()
	out := messages(errs)
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" && resp.StatusCode == http.StatusOK {
		out = append(out, c.events(body)...)
	}
	return out
}

// events checks each data: line of an event stream against Event.
func (c *Checker) events(body []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			for _, m := range c.Value("Event", json.RawMessage(data)) {
				out = append(out, fmt.Sprintf("event stream line %d: %s", n, m))
			}
		}
	}
	return out
}

// Value returns what is wrong with v, marshalled to JSON (a
// json.RawMessage as it is), as an instance of the document's component
// schema name.
func (c *Checker) Value(name string, v any) []string {
	s := c.Schema(name)
	if s == nil {
		return []string{"the document has no schema " + name}
	}
	b, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return []string{fmt.Sprintf("marshal %T: %v", v, err)}
		}
	}
	c.mu.Lock()
	_, errs := c.schema.ValidateSchemaBytes(s, b)
	c.mu.Unlock()
	return messages(errs)
}

// Schema returns the document's component schema name, nil without one.
func (c *Checker) Schema(name string) *base.Schema {
	if c.model.Components == nil || c.model.Components.Schemas == nil {
		return nil
	}
	p, ok := c.model.Components.Schemas.Get(name)
	if !ok {
		return nil
	}
	return p.Schema()
}

// messages renders the validator's errors, with each schema failure's
// location.
func messages(errs []*liberrors.ValidationError) []string {
	var out []string
	for _, e := range errs {
		m := e.Message
		if e.Reason != "" && e.Reason != e.Message {
			m += ": " + e.Reason
		}
		for _, f := range e.SchemaValidationErrors {
			m += fmt.Sprintf("\n\t%s: %s", f.FieldPath, f.Reason)
		}
		out = append(out, m)
	}
	return out
}
