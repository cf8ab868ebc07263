package spec

import (
	"cmp"
	"maps"
	"slices"

	"github.com/agentctl/agentctl/notify"
	"github.com/agentctl/agentctl/spec/tmpl"
)

// EnvRead is one environment variable a spec reads, and where: a
// ${{ env.NAME }} placeholder, a name in inheritEnv, a model's apiKey or
// a notify target's secret.
type EnvRead struct {
	Name string
	Pos  Pos    // of the tool, model or agent that reads it
	What string // "tool restart (exec.env)", "model gpt (apiKey)", ...
}

// EnvReads returns every environment variable the spec reads, sorted by
// place, then name. These are all an agent's tools, models and
// notifications can see of the environment besides BaseEnv's.
func (s *Spec) EnvReads() []EnvRead {
	var out []EnvRead
	add := func(pos Pos, what string, names ...string) {
		for _, n := range names {
			out = append(out, EnvRead{Name: n, Pos: pos, What: what})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Models)) {
		m := s.Models[name]
		if m.APIKey != nil {
			add(m.Pos, "model "+name+" (apiKey)", m.APIKey.EnvNames()...)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Tools)) {
		t := s.Tools[name]
		for _, r := range toolEnvReads(t) {
			add(t.Pos, "tool "+name+" ("+r.field+")", r.names...)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Agents)) {
		a := s.Agents[name]
		for _, t := range a.Notify {
			add(a.Pos, "agent "+name+" (notify)", targetEnv(t)...)
		}
	}
	out = append(out, s.onCallEnvReads()...)
	slices.SortStableFunc(out, func(a, b EnvRead) int {
		return cmp.Or(cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Pos.Col, b.Pos.Col))
	})
	return out
}

// fieldReads are the variables one field of a tool reads.
type fieldReads struct {
	field string
	names []string
}

// toolEnvReads lists what each field of a tool's declaration reads.
func toolEnvReads(t *Tool) []fieldReads {
	var out []fieldReads
	str := func(field string, ts ...*tmpl.String) {
		var names []string
		for _, x := range ts {
			names = append(names, x.EnvNames()...)
		}
		if len(names) > 0 {
			out = append(out, fieldReads{field, names})
		}
	}
	strMap := func(field string, m map[string]*tmpl.String) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			str(field+"."+k, m[k])
		}
	}
	names := func(field string, ns []string) {
		if len(ns) > 0 {
			out = append(out, fieldReads{field, ns})
		}
	}
	str("output", t.Output)
	if e := t.Exec; e != nil {
		str("exec.command", e.Command...)
		strMap("exec.env", e.Env)
		names("exec.inheritEnv", e.InheritEnv)
	}
	if h := t.HTTP; h != nil {
		str("http.url", h.URL)
		strMap("http.query", h.Query)
		strMap("http.headers", h.Headers)
		if h.Body != nil {
			names("http.body", h.Body.EnvNames())
		}
	}
	if f := t.File; f != nil {
		str("file.path", f.Path)
		str("file.content", f.Content)
	}
	if m := t.MCP; m != nil {
		strMap("mcp.env", m.Env)
		names("mcp.inheritEnv", m.InheritEnv)
	}
	if t.Preview != nil { // an action as the tool's own: what it reads counts
		for _, r := range toolEnvReads(t.Preview.Tool(t)) {
			out = append(out, fieldReads{"preview." + r.field, r.names})
		}
	}
	return out
}

// targetEnv lists the variables a notify target's values name.
func targetEnv(t notify.Target) []string {
	var vals []string
	if w := t.Webhook; w != nil {
		vals = append(vals, w.URL, w.Secret)
	}
	if sl := t.Slack; sl != nil {
		vals = append(vals, sl.URL)
	}
	var out []string
	for _, v := range vals {
		if n, ok := notify.EnvName(v); ok {
			out = append(out, n)
		}
	}
	return out
}
