package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// parseLabels reads run --label KEY=VALUE flags, each key once; the
// engine checks what a key may hold (engine.checkLabels).
func parseLabels(flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(flags))
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, usageErr(fmt.Errorf("run: --label %q: want KEY=VALUE", f))
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
