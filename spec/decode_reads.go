package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/spec/tmpl"
)

// runFields are what placeholders see as run.
var runFields = []string{"id", "agent", "step"}

// toolReads checks the fields a tool's conditions and templates read
// against what they can see: input.X against the input schema's
// properties, resume.X against the resumeSchema's, run.X against the
// run's fields. A typo in a gate would otherwise read nil and let calls
// through without a human.
func (d *decoder) toolReads(f *file, v *yaml.Node, t *Tool, path string) {
	type reader interface{ Reads(string) []string }
	check := func(key string, n *yaml.Node, r reader) {
		if n == nil {
			return
		}
		for _, v := range []struct {
			name  string
			known []string
		}{{"input", properties(t.Input)}, {"resume", properties(t.ResumeSchema)}, {"run", runFields}} {
			for _, msg := range unknownFields(v.name, r.Reads(v.name), v.known) {
				d.errs.add(f.pos(n), "%s.%s: %s", path, key, msg)
			}
		}
	}
	check("requireApproval", field(v, "requireApproval"), t.RequireApproval)
	d.opaque(f, field(v, "requireApproval"), path+".requireApproval", t.RequireApproval)
	if m := t.MCP; m != nil {
		mn := field(v, "mcp")
		d.opaque(f, field(mn, "requireApproval"), path+".mcp.requireApproval", m.RequireApproval)
		for name, cond := range m.Tools {
			d.opaque(f, field(field(field(mn, "tools"), name), "requireApproval"), path+".mcp.tools."+name+".requireApproval", cond)
		}
	}
	if sp := t.Suspend; sp != nil {
		check("suspend.when", field(field(v, "suspend"), "when"), sp.When)
		if sp.Payload != nil {
			check("suspend.payload", field(field(v, "suspend"), "payload"), sp.Payload)
		}
	}
	if sk := t.Skip; sk != nil {
		check("skip.when", field(field(v, "skip"), "when"), sk.When)
		if sk.Output != nil {
			check("skip.output", field(field(v, "skip"), "output"), sk.Output)
		}
	}
	if t.Output != nil {
		check("output", field(v, "output"), t.Output)
	}
}

// opaque refuses a gate that reads input in a way that hides which
// fields: what it reads cannot be checked, here or when a call comes.
func (d *decoder) opaque(f *file, n *yaml.Node, path string, cond tmpl.Expr) {
	if _, hidden := cond.Paths("input"); hidden && n != nil {
		d.errs.add(f.pos(n), "%s: read input only as input.NAME (or input.NAME.FIELD): get(input, ...), input[...] and the like hide what the gate reads", path)
	}
}

// unknownFields says, for each name read as variable.NAME that known
// does not hold (nil known: anything goes), that there is no such field,
// with the nearest known name.
func unknownFields(variable string, names, known []string) []string {
	if known == nil {
		return nil
	}
	what := map[string]string{"input": "the input schema declares", "resume": "the resumeSchema declares", "run": "a run has"}[variable]
	var out []string
	for _, name := range names {
		if slices.Contains(known, name) {
			continue
		}
		msg := fmt.Sprintf("%s.%s: no such field", variable, name)
		if near := nearest(name, known); near != "" {
			msg += fmt.Sprintf("; did you mean %s.%s?", variable, near)
		}
		out = append(out, fmt.Sprintf("%s (%s: %s)", msg, what, strings.Join(known, ", ")))
	}
	return out
}

// properties returns the property names a schema declares, sorted; nil
// when it declares none (any object).
func properties(s *Schema) []string {
	if s == nil {
		return nil
	}
	props, ok := s.Doc["properties"].(map[string]any)
	if !ok || len(props) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(props))
}

// nearest returns the known name closest to name, if it is close: at most
// two edits away.
func nearest(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := distance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
