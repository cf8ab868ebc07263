package spec

import (
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is a JSON Schema declared in a spec: a tool's input, a suspend
// payload's or resume data's shape. format is asserted (date-time,
// email, uri, ...): a value that is not of its format is invalid.
type Schema struct {
	Doc map[string]any // as written
	Pos Pos            // where it is written

	compiled func() (*jsonschema.Schema, error)
}

// Validate checks v against the schema; a nil Schema accepts anything.
// The error is a *jsonschema.ValidationError when v is invalid.
func (s *Schema) Validate(v any) error {
	if s == nil || s.compiled == nil {
		return nil
	}
	sch, err := s.compiled()
	if err != nil {
		return fmt.Errorf("%s: schema: %w", s.Pos, err)
	}
	return sch.Validate(v)
}

// NewSchema returns a Schema for a document that did not come from a spec
// file (an MCP server's tool input), compiled on first use.
func NewSchema(doc map[string]any) *Schema { return lazySchema(doc, Pos{File: "(server)"}) }

// lazySchema returns a Schema compiled on first use, for Reload.
func lazySchema(doc map[string]any, pos Pos) *Schema {
	return &Schema{Doc: doc, Pos: pos, compiled: sync.OnceValues(func() (*jsonschema.Schema, error) {
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		if err := c.AddResource("mem:///schema", doc); err != nil {
			return nil, err
		}
		return c.Compile("mem:///schema")
	})}
}
