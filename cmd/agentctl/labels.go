package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// maxLabel bounds a label's key and value, each.
const maxLabel = 256

// parseLabels reads run --label KEY=VALUE flags: a key of letters,
// digits, '.', '_' and '-', given once.
func parseLabels(flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(flags))
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		switch {
		case !ok || k == "":
			return nil, usageErr(fmt.Errorf("run: --label %q: want KEY=VALUE", f))
		case len(k) > maxLabel || len(v) > maxLabel:
			return nil, usageErr(fmt.Errorf("run: --label %q: a key or value is over %d bytes", f, maxLabel))
		case strings.IndexFunc(k, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
		}) >= 0:
			return nil, usageErr(fmt.Errorf("run: --label %q: a key is letters, digits, '.', '_' and '-'", f))
		}
		if _, dup := out[k]; dup {
			return nil, usageErr(fmt.Errorf("run: --label %s is given twice", k))
		}
		out[k] = v
	}
	return out, nil
}

// labelList says labels as KEY=VALUE, by key.
func labelList(labels map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		out = append(out, k+"="+labels[k])
	}
	return strings.Join(out, ", ")
}
