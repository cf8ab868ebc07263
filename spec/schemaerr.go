package spec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"go.yaml.in/yaml/v3"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// validateSchema checks v, the value of f, against the spec schema and
// records each violation at the node it concerns.
func validateSchema(f *file, sch *jsonschema.Schema, v any, errs *Errors) {
	err := sch.Validate(v)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		if err != nil {
			errs.add(f.pos(f.root), "%v", err)
		}
		return
	}
	for _, leaf := range Violations(ve) {
		n := lookup(f.root, leaf.Path)
		if leaf.Key != "" {
			if k := keyNode(n, leaf.Key); k != nil {
				n = k
			}
		}
		msg := leaf.String()
		if leaf.Key != "" {
			if s := suggest(leaf.Key, knownFields(leaf.schemaURL)); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
		}
		errs.add(f.pos(n), "%s", msg)
	}
}

// Violation is one way a value breaks a JSON Schema.
type Violation struct {
	Path []string // JSON pointer tokens of the offending value
	Key  string   // for an unknown field: the field's name
	Msg  string
	// schemaURL locates the schema that refused the unknown field.
	schemaURL string
}

// about reports whether v is about one of the top-level fields named:
// at or below one, or its absence.
func (v Violation) about(fields []string) bool {
	for _, f := range fields {
		if len(v.Path) > 0 && v.Path[0] == f || len(v.Path) == 0 && v.Msg == fmt.Sprintf("missing required field %q", f) {
			return true
		}
	}
	return false
}

// Pointer returns the offending value's JSON pointer, "/" for the root.
func (v Violation) Pointer() string { return pointer(v.Path) }

// String renders the violation with a dotted path, for spec errors.
func (v Violation) String() string {
	path := strings.Join(append(append([]string(nil), v.Path...), v.Key), ".")
	path = strings.Trim(path, ".")
	if path == "" {
		return v.Msg
	}
	return path + ": " + v.Msg
}

// formatExamples say how to write a value of a format.
var formatExamples = map[string]string{
	"date-time": "RFC 3339, such as 2026-12-06T02:00:00Z",
	"date":      "a date such as 2026-12-06",
	"time":      "a time such as 02:00:00Z",
	"duration":  "ISO 8601, such as P1DT2H",
	"uri":       "an absolute URI, such as https://example.com/path",
	"email":     "an address such as ops@example.com",
	"uuid":      "a UUID such as 123e4567-e89b-12d3-a456-426614174000",
	"ipv4":      "an address such as 192.0.2.10",
	"ipv6":      "an address such as 2001:db8::10",
	"hostname":  "a host name such as db-1.example.com",
}

// FormatExample says how to write a value of a JSON Schema format, such
// as "RFC 3339, such as 2026-12-06T02:00:00Z"; ok false for a format it
// has no words for.
func FormatExample(format string) (words string, ok bool) {
	words, ok = formatExamples[format]
	return words, ok
}

// Violations flattens a validation error into its leaf violations.
func Violations(ve *jsonschema.ValidationError) []Violation {
	printer := message.NewPrinter(language.English)
	var out []Violation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			causes := e.Causes
			switch e.ErrorKind.(type) {
			case *kind.AnyOf, *kind.OneOf:
				// A value of the right type for one branch and the wrong
				// type for another: the type mismatch is noise.
				var typed []*jsonschema.ValidationError
				for _, c := range causes {
					if _, ok := c.ErrorKind.(*kind.Type); !ok {
						typed = append(typed, c)
					}
				}
				if len(typed) > 0 {
					causes = typed
				}
			}
			for _, c := range causes {
				walk(c)
			}
			return
		}
		path := e.InstanceLocation
		switch k := e.ErrorKind.(type) {
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				out = append(out, Violation{Path: path, Key: p, Msg: "unknown field", schemaURL: e.SchemaURL})
			}
			return
		case *kind.Required:
			for _, p := range k.Missing {
				out = append(out, Violation{Path: path, Msg: fmt.Sprintf("missing required field %q", p)})
			}
			return
		case *kind.Reference, *kind.Group, *kind.Schema:
			return // wrappers without causes carry no message of their own
		case *kind.Format:
			msg := e.ErrorKind.LocalizedString(printer)
			if ex, ok := formatExamples[k.Want]; ok {
				msg += "; write it as " + ex
			}
			out = append(out, Violation{Path: path, Msg: msg})
			return
		}
		msg := e.ErrorKind.LocalizedString(printer)
		if _, ok := e.ErrorKind.(*kind.Type); ok && strings.HasSuffix(e.SchemaURL, "#/$defs/duration") {
			msg += ": a duration such as 30s, 5m or 1h30m"
		}
		out = append(out, Violation{Path: path, Msg: msg})
	}
	walk(ve)
	return out
}

// offsetPos returns the position of byte offset off within n's value when
// n is a single-line scalar, else n's position.
func (f *file) offsetPos(n *yaml.Node, off int) Pos {
	p := f.pos(n)
	if strings.Contains(n.Value, "\n") {
		return p
	}
	switch n.Style {
	case 0, yaml.FlowStyle:
		p.Col += off
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		p.Col += off + 1
	}
	return p
}
