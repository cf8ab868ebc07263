package api

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/internal/jsontype"
)

// doc is the part of the OpenAPI document the reference renders.
type doc struct {
	Info       struct{ Title, Version, Description string }
	Paths      map[string]map[string]operation
	Components struct {
		Schemas    map[string]schema
		Parameters map[string]parameter
		Responses  map[string]response
	}
}

type operation struct {
	OperationID string `json:"operationId"`
	Summary     string
	Description string
	Parameters  []parameter
	RequestBody *struct {
		Content map[string]struct{ Schema schema }
	} `json:"requestBody"`
	Responses map[string]response
}

type parameter struct {
	Ref         string `json:"$ref"`
	Name, In    string
	Description string
	Required    bool
	Schema      schema
}

type response struct {
	Ref         string `json:"$ref"`
	Description string
	Content     map[string]struct{ Schema schema }
}

type schema struct {
	Ref         string `json:"$ref"`
	Type        any
	Description string
	Enum        []any
	Const       any
	Items       *schema
	Properties  map[string]schema
	Required    []string
	AllOf       []schema `json:"allOf"`
	OneOf       []schema `json:"oneOf"`
	AnyOf       []schema `json:"anyOf"`
}

// methods is the order operations are listed in under a path.
var methods = []string{"get", "post", "put", "patch", "delete"}

// Reference renders the OpenAPI document as Markdown: each route with
// its parameters and responses, then each schema's fields. make docs
// writes it to docs/reference/api.md; a test keeps that file current.
func Reference() ([]byte, error) {
	var d doc
	if err := json.Unmarshal(openAPI, &d); err != nil {
		return nil, fmt.Errorf("api reference: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# The HTTP API\n\n<!-- Generated from api/openapi.json by make docs; do not edit. -->\n\n")
	fmt.Fprintf(&b, "%s, version %s. The server serves this document at `/v1/openapi.json`.\n", d.Info.Title, d.Info.Version)
	fmt.Fprintf(&b, "Errors have the body [ErrorBody](#errorbody); each response's exit code is the CLI's for the same error.\n\n## Routes\n")
	for _, p := range slices.Sorted(maps.Keys(d.Paths)) {
		for _, m := range methods {
			if op, ok := d.Paths[p][m]; ok {
				writeOperation(&b, &d, strings.ToUpper(m)+" "+p, op)
			}
		}
	}
	b.WriteString("\n## Schemas\n")
	for _, name := range slices.Sorted(maps.Keys(d.Components.Schemas)) {
		writeSchema(&b, name, d.Components.Schemas[name])
	}
	return []byte(b.String()), nil
}

// writeOperation writes one route: summary, parameters, body, responses.
func writeOperation(b *strings.Builder, d *doc, title string, op operation) {
	fmt.Fprintf(b, "\n### `%s`\n\n%s\n", title, op.Summary)
	if op.Description != "" {
		fmt.Fprintf(b, "\n%s\n", op.Description)
	}
	if len(op.Parameters) > 0 {
		b.WriteString("\n| parameter | in | type | meaning |\n| --- | --- | --- | --- |\n")
		for _, p := range op.Parameters {
			if p.Ref != "" {
				p = d.Components.Parameters[refName(p.Ref)]
			}
			req := ""
			if p.Required {
				req = " (required)"
			}
			fmt.Fprintf(b, "| `%s`%s | %s | %s | %s |\n", p.Name, req, p.In, typeOf(p.Schema), cell(p.Description))
		}
	}
	if op.RequestBody != nil {
		if c, ok := op.RequestBody.Content["application/json"]; ok {
			fmt.Fprintf(b, "\nBody: %s.\n", typeOf(c.Schema))
		}
	}
	b.WriteString("\n| status | meaning | body |\n| --- | --- | --- |\n")
	for _, code := range slices.Sorted(maps.Keys(op.Responses)) {
		r := op.Responses[code]
		if r.Ref != "" {
			r = d.Components.Responses[refName(r.Ref)]
		}
		body := ""
		for _, ct := range slices.Sorted(maps.Keys(r.Content)) {
			body = typeOf(r.Content[ct].Schema)
			if ct != "application/json" {
				body = "`" + ct + "`"
			}
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", code, cell(r.Description), body)
	}
}

// writeSchema writes one schema: its description and fields.
func writeSchema(b *strings.Builder, name string, s schema) {
	fmt.Fprintf(b, "\n### %s\n", name)
	if s.Description != "" {
		fmt.Fprintf(b, "\n%s\n", s.Description)
	}
	if len(s.Properties) == 0 {
		if t := typeOf(s); t != "object" {
			fmt.Fprintf(b, "\nType: %s.\n", t)
		}
		return
	}
	b.WriteString("\n| field | type | required | meaning |\n| --- | --- | --- | --- |\n")
	for _, f := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[f]
		req := ""
		if slices.Contains(s.Required, f) {
			req = "yes"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", f, typeOf(p), req, cell(p.Description))
	}
}

// typeOf says a schema's type in a few words, linking named schemas.
func typeOf(s schema) string {
	switch {
	case s.Ref != "":
		n := refName(s.Ref)
		return "[" + n + "](#" + strings.ToLower(n) + ")"
	case len(s.AllOf) == 1:
		return typeOf(s.AllOf[0])
	case len(s.OneOf) > 0 || len(s.AnyOf) > 0:
		var alts []string
		for _, a := range append(slices.Clone(s.OneOf), s.AnyOf...) {
			alts = append(alts, typeOf(a))
		}
		return strings.Join(alts, " or ")
	case s.Const != nil:
		return jsontype.Values(s.Const)
	case len(s.Enum) > 0:
		return jsontype.Values(s.Enum...)
	}
	t := jsontype.Words(s.Type)
	if t == "array" && s.Items != nil {
		return "array of " + typeOf(*s.Items)
	}
	return t
}

// refName is the last element of a JSON reference.
func refName(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }

// cell keeps a text inside one table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", `\|`)
}
