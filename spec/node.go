package spec

import (
	"encoding/json"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// file is one parsed spec file.
type file struct {
	name string
	dir  string     // where relative paths in it resolve; empty: the working directory
	root *yaml.Node // the document's top mapping (or whatever it holds)

	expanding map[*yaml.Node]bool // aliases being expanded, to catch cycles
	budget    int                 // nodes value may still visit
}

// maxNodes bounds the nodes one document may expand to, aliases
// included, against alias bombs.
const maxNodes = 1 << 20

func (f *file) pos(n *yaml.Node) Pos {
	if n == nil {
		return Pos{File: f.name}
	}
	return Pos{File: f.name, Line: n.Line, Col: n.Column}
}

// value converts a YAML node to the JSON data model (map[string]any, []any,
// string, json.Number, bool, nil), resolving aliases and merge keys. It
// reports non-string keys and duplicate keys.
func (f *file) value(n *yaml.Node, errs *Errors) any {
	if f.budget--; f.budget == 0 {
		errs.add(f.pos(n), "document too large: more than %d values once aliases are expanded", maxNodes)
	}
	if f.budget <= 0 {
		return nil
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return f.value(n.Content[0], errs)
	case yaml.AliasNode:
		if f.expanding[n.Alias] {
			errs.add(f.pos(n), "alias *%s refers to itself", n.Value)
			return nil
		}
		if f.expanding == nil {
			f.expanding = map[*yaml.Node]bool{}
		}
		f.expanding[n.Alias] = true
		defer delete(f.expanding, n.Alias)
		return f.value(n.Alias, errs)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			out = append(out, f.value(c, errs))
		}
		return out
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		seen := make(map[string]bool, len(n.Content)/2)
		for k, v := range pairs(n) {
			if k.Tag == "!!merge" {
				continue
			}
			if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
				errs.add(f.pos(k), "keys must be strings")
				continue
			}
			if seen[k.Value] {
				errs.add(f.pos(k), "duplicate key %q", k.Value)
				continue
			}
			seen[k.Value] = true
			out[k.Value] = f.value(v, errs)
		}
		return out
	}
	switch n.Tag {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			errs.add(f.pos(n), "invalid boolean %q", n.Value)
		}
		return b
	case "!!int", "!!float":
		var num any
		if err := n.Decode(&num); err != nil {
			errs.add(f.pos(n), "invalid number %q", n.Value)
			return nil
		}
		switch v := num.(type) {
		case int:
			return json.Number(strconv.Itoa(v))
		case uint64:
			return json.Number(strconv.FormatUint(v, 10))
		case float64:
			return json.Number(strconv.FormatFloat(v, 'g', -1, 64))
		}
		return json.Number(n.Value)
	}
	return n.Value
}

// pairs yields the key and value nodes of a mapping, merge keys ("<<")
// expanded in place so that explicit keys come first.
func pairs(n *yaml.Node) func(yield func(k, v *yaml.Node) bool) {
	return func(yield func(k, v *yaml.Node) bool) {
		if n = deref(n); n == nil || n.Kind != yaml.MappingNode {
			return
		}
		var merged []*yaml.Node
		explicit := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				merged = append(merged, v)
				continue
			}
			explicit[k.Value] = true
			if !yield(k, v) {
				return
			}
		}
		for _, m := range merged {
			m = deref(m)
			srcs := []*yaml.Node{m}
			if m.Kind == yaml.SequenceNode {
				srcs = m.Content
			}
			for _, s := range srcs {
				for k, v := range pairs(s) {
					if explicit[k.Value] {
						continue
					}
					explicit[k.Value] = true
					if !yield(k, v) {
						return
					}
				}
			}
		}
	}
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// field returns the value node of key in mapping n, or nil.
func field(n *yaml.Node, key string) *yaml.Node {
	for k, v := range pairs(n) {
		if k.Value == key {
			return deref(v)
		}
	}
	return nil
}

// keyNode returns the key node of key in mapping n, or nil.
func keyNode(n *yaml.Node, key string) *yaml.Node {
	for k := range pairs(n) {
		if k.Value == key {
			return k
		}
	}
	return nil
}

// lookup follows a JSON pointer's tokens from n and returns the deepest
// node it reaches.
func lookup(n *yaml.Node, tokens []string) *yaml.Node {
	n = deref(n)
	for _, t := range tokens {
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			next = field(n, t)
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(t); err == nil && i >= 0 && i < len(n.Content) {
				next = deref(n.Content[i])
			}
		}
		if next == nil {
			return n
		}
		n = next
	}
	return n
}

// pointer renders JSON pointer tokens as "/a/b".
func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return "/"
	}
	r := strings.NewReplacer("~", "~0", "/", "~1")
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(r.Replace(t))
	}
	return b.String()
}

// items returns the elements of a sequence node, or nil for anything else.
func items(n *yaml.Node) []*yaml.Node {
	if n = deref(n); n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = deref(c)
	}
	return out
}

// scalar returns n when it is a scalar node, else nil.
func scalar(n *yaml.Node) *yaml.Node {
	if n = deref(n); n == nil || n.Kind != yaml.ScalarNode {
		return nil
	}
	return n
}
