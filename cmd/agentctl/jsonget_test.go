package main

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// jsonget prints, as one line of compact JSON with sorted keys, the
// value at a dotted path in a JSON file (numbers index arrays):
//
//	jsonget FILE items.0.upload
func jsonget(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: jsonget FILE PATH")
	}
	var v any
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &v))
	for _, k := range strings.Split(args[1], ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[k]; !ok {
				ts.Fatalf("jsonget: %s: no %q", args[1], k)
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				ts.Fatalf("jsonget: %s: no element %q", args[1], k)
			}
			v = x[i]
		default:
			ts.Fatalf("jsonget: %s: %q is inside neither an object nor an array", args[1], k)
		}
	}
	b, err := json.Marshal(v)
	ts.Check(err)
	ts.Stdout().Write(append(b, '\n'))
}
