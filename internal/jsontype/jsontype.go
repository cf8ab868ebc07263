// Package jsontype says a JSON Schema "type" keyword in words, for the
// generated references (the spec's and the HTTP API's).
package jsontype

import (
	"fmt"
	"strings"
)

// Words is the value of a schema's "type" keyword in words: "string",
// "string or null" for a list of types, "any" when it has none.
func Words(t any) string {
	switch v := t.(type) {
	case string:
		return v
	case []any:
		ts := make([]string, len(v))
		for i, x := range v {
			ts[i] = fmt.Sprint(x)
		}
		return strings.Join(ts, " or ")
	}
	return "any"
}

// Values lists a schema's enum (or const) values as Markdown code:
// "`a`, `b`".
func Values(vs ...any) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprintf("`%v`", v)
	}
	return strings.Join(out, ", ")
}
