package spec

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
)

// schemaDoc is the spec schema as plain JSON values, to look up the
// fields known at a place.
var schemaDoc = sync.OnceValue(func() map[string]any {
	var doc map[string]any
	if json.Unmarshal(schemaJSON, &doc) != nil {
		return nil
	}
	return doc
})

// knownFields returns the properties the spec schema declares at
// schemaURL (a schema location, as jsonschema reports it: the schema's
// URL, then "#" and a JSON pointer), sorted; nil when it declares none.
func knownFields(schemaURL string) []string {
	_, frag, _ := strings.Cut(schemaURL, "#")
	var at any = schemaDoc()
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if tok == "" {
			continue
		}
		m, ok := at.(map[string]any)
		if !ok {
			return nil
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if at = m[tok]; at == nil {
			return nil
		}
	}
	m, _ := at.(map[string]any)
	if p, ok := m["additionalProperties"].(bool); ok && p && m["properties"] == nil {
		return nil
	}
	props, _ := m["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// suggest returns the known name closest to name by edit distance
// (a transposition counts as one edit), when one is close: at most 2
// edits, and at most a third of the longer name's length. Of names
// equally close the first in order wins; "" when none is close.
func suggest(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		d := editDistance(strings.ToLower(name), strings.ToLower(k))
		if d == 0 && k == name {
			continue
		}
		if d < bestD && 3*d <= max(len(name), len(k)) {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and
// b: insertions, deletions, substitutions and transpositions of
// adjacent runes.
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	prev2 := make([]int, len(t)+1)
	prev := make([]int, len(t)+1)
	cur := make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(s); i++ {
		cur[0] = i
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(t)]
}
