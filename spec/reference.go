package spec

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/internal/jsontype"
)

// refSchema is the part of a JSON Schema the reference reads.
type refSchema struct {
	Ref         string                `json:"$ref"`
	Type        any                   `json:"type"`
	Description string                `json:"description"`
	Properties  map[string]*refSchema `json:"properties"`
	Required    []string              `json:"required"`
	Items       *refSchema            `json:"items"`
	Additional  any                   `json:"additionalProperties"`
	Enum        []any                 `json:"enum"`
	Const       any                   `json:"const"`
	Default     any                   `json:"default"`
	Minimum     *float64              `json:"minimum"`
	Maximum     *float64              `json:"maximum"`
	Pattern     string                `json:"pattern"`
	OneOf       []*refSchema          `json:"oneOf"`
	AnyOf       []*refSchema          `json:"anyOf"`
}

// Reference returns the spec format's reference in Markdown, generated
// from the JSON Schema spec files are checked against (FormatSchema):
// every section and field with its type, whether it is required, its
// constraints and its description. docs/reference/spec.md is its
// output; a test keeps the two the same.
func Reference() ([]byte, error) {
	var doc struct {
		refSchema
		Defs map[string]*refSchema `json:"$defs"`
	}
	if err := json.Unmarshal(schemaJSON, &doc); err != nil {
		return nil, fmt.Errorf("spec reference: %w", err)
	}
	var b strings.Builder
	b.WriteString("# Spec reference\n\n")
	b.WriteString("Generated from the spec's JSON Schema (`agentctl schema`) by `make docs`: do not edit.\n")
	b.WriteString("A spec is YAML. `agentctl validate` checks it against this schema, then for meaning.\n\n")
	writeFields(&b, "The file", &doc.refSchema)
	for _, name := range slices.Sorted(maps.Keys(doc.Defs)) {
		writeFields(&b, name, doc.Defs[name])
	}
	return []byte(b.String()), nil
}

// writeFields writes one section: a definition's description and, for
// an object, a table of its fields; nested objects follow as sections of
// their own.
func writeFields(b *strings.Builder, name string, s *refSchema) {
	fmt.Fprintf(b, "## %s\n\n", name)
	if s.Description != "" {
		fmt.Fprintf(b, "%s\n\n", oneLineText(s.Description))
	}
	if len(s.Properties) == 0 {
		fmt.Fprintf(b, "Type: %s.\n\n", typeOf(s))
		if s.Items != nil && len(s.Items.Properties) > 0 {
			writeFields(b, name+" (each item)", s.Items)
		}
		return
	}
	b.WriteString("| field | type | required | meaning |\n| --- | --- | --- | --- |\n")
	var nested []string
	for _, f := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[f]
		req := ""
		if slices.Contains(s.Required, f) {
			req = "yes"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", f, typeOf(p), req, cell(meaning(p)))
		if p.Ref == "" && len(p.Properties) > 0 {
			nested = append(nested, f)
		}
	}
	b.WriteString("\n")
	for _, f := range nested {
		writeFields(b, name+"."+f, s.Properties[f])
	}
}

// typeOf says a schema's type, linking a definition it refers to.
func typeOf(s *refSchema) string {
	switch {
	case s.Ref != "":
		d := strings.TrimPrefix(s.Ref, "#/$defs/")
		return fmt.Sprintf("[%s](#%s)", d, strings.ToLower(d))
	case s.Const != nil:
		return jsontype.Values(s.Const)
	case len(s.Enum) > 0:
		return jsontype.Values(s.Enum...)
	case len(s.OneOf) > 0 || len(s.AnyOf) > 0:
		var ts []string
		for _, x := range append(s.OneOf, s.AnyOf...) {
			ts = append(ts, typeOf(x))
		}
		return strings.Join(slices.Compact(ts), " or ")
	}
	t := jsontype.Words(s.Type)
	switch {
	case t == "array" && s.Items != nil:
		return "array of " + typeOf(s.Items)
	case t == "object" && len(s.Properties) == 0:
		if a, ok := s.Additional.(map[string]any); ok {
			if r, ok := a["$ref"].(string); ok {
				d := strings.TrimPrefix(r, "#/$defs/")
				return fmt.Sprintf("map of name to [%s](#%s)", d, strings.ToLower(d))
			}
		}
	}
	return t
}

// meaning is a field's description with its constraints.
func meaning(s *refSchema) string {
	parts := []string{oneLineText(s.Description)}
	if s.Default != nil {
		parts = append(parts, fmt.Sprintf("Default: `%v`.", s.Default))
	}
	if s.Minimum != nil {
		parts = append(parts, fmt.Sprintf("At least %v.", *s.Minimum))
	}
	if s.Maximum != nil {
		parts = append(parts, fmt.Sprintf("At most %v.", *s.Maximum))
	}
	if s.Pattern != "" {
		parts = append(parts, fmt.Sprintf("Matches `%s`.", s.Pattern))
	}
	return strings.TrimSpace(strings.Join(parts, " "))
}

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

// cell escapes what would end a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
