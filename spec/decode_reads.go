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

// toolReads checks the fields each placeholder of a tool reads against
// what it can see: input.X against the input schema's properties,
// resume.X against the resumeSchema's, run.X against the run's fields. A
// typo in a gate would otherwise read nil and let calls through without a
// human; one in a command, URL or body would render as nothing. Each
// unknown field is reported where it is read.
func (d *decoder) toolReads(f *file, v *yaml.Node, t *Tool, path string) {
	known := map[string][]string{"input": properties(t.Input), "resume": properties(t.ResumeSchema), "run": runFields}
	if t.Suspend == nil && t.ResumeSchema == nil {
		known["resume"] = []string{} // a tool that never suspends gets no resume data
	}
	for _, at := range []struct {
		key  string
		vars tmpl.Vars
		// action: what the tool does, checked when a spec is loaded, not
		// in a snapshot accepted before (its runs stay decidable).
		action bool
	}{
		{"requireApproval", approvalVars, false},
		{"suspend.when", toolVars, false}, {"suspend.payload", toolVars, false},
		{"skip.when", toolVars, false}, {"skip.output", toolVars, false},
		{"output", actionVars, false},
		{"exec.command", actionVars, true}, {"exec.env", actionVars, true},
		{"http.url", actionVars, true}, {"http.query", actionVars, true},
		{"http.headers", actionVars, true}, {"http.body", actionVars, true},
		{"file.path", actionVars, true}, {"file.content", actionVars, true},
		{"preview.exec.command", actionVars, true}, {"preview.exec.env", actionVars, true},
		{"preview.http.url", actionVars, true}, {"preview.http.query", actionVars, true},
		{"preview.http.headers", actionVars, true}, {"preview.http.body", actionVars, true},
		{"preview.file.path", actionVars, true},
	} {
		if at.action && d.trusted {
			continue
		}
		n := v
		for _, k := range strings.Split(at.key, ".") {
			n = field(n, k)
		}
		r := &reads{d: d, f: f, vars: at.vars, known: known, seen: map[*yaml.Node]bool{}}
		r.walk(n, path+"."+at.key)
	}
	d.opaque(f, field(v, "requireApproval"), path+".requireApproval", t.RequireApproval)
	if m := t.MCP; m != nil {
		mn := field(v, "mcp")
		d.opaque(f, field(mn, "requireApproval"), path+".mcp.requireApproval", m.RequireApproval)
		for name, cond := range m.Tools {
			d.opaque(f, field(field(field(mn, "tools"), name), "requireApproval"), path+".mcp.tools."+name+".requireApproval", cond)
		}
	}
}

// reads checks the placeholders in one part of a tool declaration.
type reads struct {
	d     *decoder
	f     *file
	vars  tmpl.Vars
	known map[string][]string // by variable; nil: anything goes
	seen  map[*yaml.Node]bool // each node once, aliases included
}

// walk checks every string under n, path naming where n is.
func (r *reads) walk(n *yaml.Node, path string) {
	if n = deref(n); n == nil || r.seen[n] {
		return
	}
	r.seen[n] = true
	switch n.Kind {
	case yaml.SequenceNode:
		for i, c := range n.Content {
			r.walk(c, fmt.Sprintf("%s[%d]", path, i))
		}
	case yaml.MappingNode:
		for k, v := range pairs(n) {
			r.walk(v, path+"."+k.Value)
		}
	case yaml.ScalarNode:
		if n.Tag != "!!str" || !tmpl.Has(n.Value) {
			return
		}
		t, err := tmpl.Parse(n.Value, r.vars, r.d.tmplOpts()...)
		if err != nil {
			return // reported where the placeholder is compiled
		}
		for _, variable := range []string{"input", "resume", "run"} {
			for _, read := range t.ReadsAt(variable) {
				if msg := unknownField(variable, read.Name, r.known[variable]); msg != "" {
					r.d.errs.add(r.f.offsetPos(n, read.Offset), "%s: %s", path, msg)
				}
			}
		}
	}
}

// opaque refuses a gate that reads input in a way that hides which
// fields: what it reads cannot be checked, here or when a call comes.
func (d *decoder) opaque(f *file, n *yaml.Node, path string, cond tmpl.Expr) {
	if _, hidden := cond.Paths("input"); hidden && n != nil {
		d.errs.add(f.pos(n), "%s: read input only as input.NAME (or input.NAME.FIELD): get(input, ...), input[...] and the like hide what the gate reads", path)
	}
}

// unknownField says, when name, read as variable.NAME, is not one known
// holds (nil known: anything goes), that there is no such field, with the
// nearest known name; "" when it is known.
func unknownField(variable, name string, known []string) string {
	if known == nil || slices.Contains(known, name) {
		return ""
	}
	if len(known) == 0 && variable == "resume" {
		return fmt.Sprintf("resume.%s: the tool never suspends, so there is no resume data (suspend and resumeSchema declare it)", name)
	}
	what := map[string]string{"input": "the input schema declares", "resume": "the resumeSchema declares", "run": "a run has"}[variable]
	msg := fmt.Sprintf("%s.%s: no such field", variable, name)
	if near := nearest(name, known); near != "" {
		msg += fmt.Sprintf("; did you mean %s.%s?", variable, near)
	}
	return fmt.Sprintf("%s (%s: %s)", msg, what, strings.Join(known, ", "))
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
