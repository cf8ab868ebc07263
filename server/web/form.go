package web

import (
	"encoding/json"
	"fmt"
	"html/template"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/spec"
)

// field is one input of a resume form, made from the tool's
// resumeSchema: its type, whether it is required, its choices and
// pattern, and the server's error at it.
type field struct {
	Name, Label, Type string // Type: text, integer, number, boolean, enum, json
	Required          bool
	Enum              []string
	Pattern           string
	Description       string
	// Format is the field's JSON Schema format with how to write it
	// (Example is a value such as it wants, for a placeholder).
	Format, FormatHow, Example string
	Err                        string
}

// fieldsOf makes the fields of an object schema, in its properties'
// order of appearance (required ones first); none for a schema that is
// not an object of properties (the form then takes raw JSON).
func fieldsOf(schema json.RawMessage) []field {
	var s struct {
		Type       any                        `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil
	}
	var out []field
	for name, raw := range s.Properties {
		var p struct {
			Type        any    `json:"type"`
			Enum        []any  `json:"enum"`
			Pattern     string `json:"pattern"`
			Description string `json:"description"`
			Title       string `json:"title"`
			Format      string `json:"format"`
		}
		json.Unmarshal(raw, &p)
		f := field{Name: name, Label: name, Required: slices.Contains(s.Required, name), Pattern: p.Pattern, Description: p.Description, Format: p.Format}
		if how, ok := spec.FormatExample(p.Format); ok {
			f.FormatHow = how
			if _, ex, ok := strings.Cut(how, "such as "); ok {
				f.Example = ex
			}
		}
		if p.Title != "" {
			f.Label = p.Title
		}
		switch t, _ := p.Type.(string); {
		case len(p.Enum) > 0:
			// A choice among strings is sent as the string; among other
			// values (numbers, booleans) as the JSON value it shows.
			f.Type = "enum"
			for _, e := range p.Enum {
				if _, ok := e.(string); !ok {
					f.Type = "enum-json"
				}
			}
			for _, e := range p.Enum {
				if b, err := json.Marshal(e); err == nil && f.Type == "enum-json" {
					f.Enum = append(f.Enum, string(b))
				} else {
					f.Enum = append(f.Enum, fmt.Sprint(e))
				}
			}
		case t == "string", t == "integer", t == "number", t == "boolean":
			f.Type = t
		default:
			f.Type = "json"
		}
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Required != out[j].Required {
			return out[i].Required
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// placeErrors puts the server's errors at their fields, by JSON pointer
// (/data/NAME); those of no field stay in the problem's list.
func placeErrors(fields []field, p *problem) {
	if p == nil {
		return
	}
	var rest []api.Detail
	for _, d := range p.Details {
		name, ok := strings.CutPrefix(d.Pointer, "/data/")
		if i := slices.IndexFunc(fields, func(f field) bool { return ok && f.Name == unescape(firstToken(name)) }); i >= 0 {
			if fields[i].Err != "" {
				fields[i].Err += "; "
			}
			fields[i].Err += d.Message
			continue
		}
		rest = append(rest, d)
	}
	p.Details = rest
}

func firstToken(p string) string {
	name, _, _ := strings.Cut(p, "/")
	return name
}

func unescape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// funcs are the templates' functions.
func funcs() template.FuncMap {
	return template.FuncMap{
		"pretty":  func(b json.RawMessage) string { return pretty(b) },
		"preview": previewOf,
		"drift":   driftOf,
		"vis":     visible,
		"stamp":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"age":     func(t time.Time) string { return age(time.Now(), t) },
		"join":    strings.Join,
		"short":   func(id string) string { return id[:min(len(id), 10)] },
		"val": func(vs map[string][]string, k string) string {
			if v := vs[k]; len(v) > 0 {
				return v[len(v)-1]
			}
			return ""
		},
		"path": func(p []string) string { return strings.Join(p, " › ") },
		"sub":  func(a, b int) int { return a - b },
		"tree": func(n []treeNode) []treeNode { return n },
		"until": func(t *time.Time) string {
			if t == nil {
				return ""
			}
			d := time.Until(*t).Round(time.Second)
			if d < 0 {
				return "overdue since " + (-d).String()
			}
			return "in " + d.String()
		},
		"dict": func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		},
	}
}
