package spec

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/spec/tmpl"
)

// RuleEffect is what a policy rule decides for a call it matches.
type RuleEffect string

// Rule effects.
const (
	// EffectDeny: the call never runs and nobody may approve it.
	EffectDeny RuleEffect = "deny"
	// EffectRequire: the call waits for a human, under the rule's
	// approvers, approvals and separateDuties on top of the tool's own.
	EffectRequire RuleEffect = "require"
	// EffectAllow: the call needs no human (for the tool's own
	// requireApproval and its agent's requireToolApproval).
	EffectAllow RuleEffect = "allow"
)

// Rule is one entry of policy.rules, or a freeze (policy.freezes), which
// is a deny rule over a dated window.
type Rule struct {
	Name   string
	Pos    Pos
	When   tmpl.Expr // constant true when absent (a freeze's)
	Effect RuleEffect
	Reason string
	// Approvers, Approvals and SeparateDuties make a require rule
	// stricter than the tool's own: zero values add nothing.
	Approvers      Approvers
	Approvals      int
	SeparateDuties bool
	// Shadow: the rule is evaluated and recorded, never enforced.
	Shadow bool
	// From and To bound a freeze (To excluded); zero for a rule.
	From, To time.Time
	// Tools and Agents, when set, limit a freeze to calls of those
	// tools (declaration names) and agents.
	Tools, Agents []string
	// Matches lists the declared tools the rule can match: those whose
	// input schema has every input field it reads. MCP servers' tools
	// (schemas known at run time) are always candidates.
	Matches []string
	// reads are the first-level input fields When reads.
	reads                   []string
	fromSrc, toSrc, whenSrc *yaml.Node
	src                     *file
}

// Now is the time a rule sees as now, in the policy's timezone: a
// time.Time whose Weekday is a number (0 Sunday .. 6 Saturday), so that
// now.Weekday() in [0, 6] reads as written.
type Now struct{ time.Time }

// Weekday is the day of the week, 0 (Sunday) to 6 (Saturday).
func (n Now) Weekday() int { return int(n.Time.Weekday()) }

// ruleVars are the variables a rule's when may use.
var ruleVars = tmpl.Vars{"tool": "", "agent": "", "path": []any{}, "input": map[string]any{},
	"starter": "", "now": Now{}, "labels": map[string]any{}}

// RuleCall is a call as rules see it.
type RuleCall struct {
	Tool    string // the tool's name, as the model called it (DECL.TOOL for MCP)
	Decl    string // the declaration the tool comes from
	Agent   string
	Path    []string // the agent path in the run's tree, root first
	Input   map[string]any
	Starter string
	At      time.Time
	Labels  map[string]string
}

// RuleMatch is a rule that matched a call; Err, when set, is why its
// condition could not be evaluated (a deny or require rule then matches:
// it fails closed; an allow rule does not).
type RuleMatch struct {
	Rule *Rule
	Err  error
}

// All returns the freezes then the rules, in the order they apply.
func (p *Policy) All() []*Rule { return append(slices.Clone(p.Freezes), p.Rules...) }

// Match evaluates the policy's rules for call c: the first matching rule
// that is not a shadow decides (nil: none does); every matching shadow
// rule is returned too, as what it would have decided.
func (p *Policy) Match(c RuleCall) (decided *RuleMatch, shadows []RuleMatch) {
	loc := p.Timezone
	if loc == nil {
		loc = time.UTC
	}
	labels := make(map[string]any, len(c.Labels))
	for k, v := range c.Labels {
		labels[k] = v
	}
	path := make([]any, len(c.Path))
	for i, s := range c.Path {
		path[i] = s
	}
	input := c.Input
	if input == nil {
		input = map[string]any{}
	}
	env := tmpl.Env{"tool": c.Tool, "agent": c.Agent, "path": path, "input": input,
		"starter": c.Starter, "now": Now{c.At.In(loc)}, "labels": labels}
	for _, r := range p.All() {
		if decided != nil && !r.Shadow || !r.applies(c) {
			continue
		}
		ok, err := r.When.Eval(env)
		if err != nil {
			ok, err = r.Effect != EffectAllow, fmt.Errorf("rule %s: %w", r.Name, err)
		}
		if !ok {
			continue
		}
		if r.Shadow {
			shadows = append(shadows, RuleMatch{Rule: r, Err: err})
		} else {
			decided = &RuleMatch{Rule: r, Err: err}
		}
	}
	return decided, shadows
}

// applies reports whether rule r can match call c before its condition:
// a freeze's window, tools and agents; a rule's input fields.
func (r *Rule) applies(c RuleCall) bool {
	if !r.From.IsZero() && (c.At.Before(r.From) || !c.At.Before(r.To)) {
		return false
	}
	if len(r.Tools) > 0 && !slices.Contains(r.Tools, c.Decl) && !slices.Contains(r.Tools, c.Tool) {
		return false
	}
	if len(r.Agents) > 0 && !slices.Contains(r.Agents, c.Agent) {
		return false
	}
	return r.Matches == nil || slices.Contains(r.Matches, c.Decl)
}

// rules decodes policy.timezone, policy.rules and policy.freezes of a
// file; checkRules finishes them once every tool is known.
func (d *decoder) rules(f *file) {
	pol := field(f.root, "policy")
	if n := scalar(field(pol, "timezone")); n != nil && n.Value != "" {
		loc, err := time.LoadLocation(n.Value)
		switch {
		case err != nil:
			d.errs.add(f.pos(n), "policy.timezone: unknown time zone %q: want an IANA name such as Europe/Berlin", n.Value)
		case d.spec.Policy.Timezone != nil && d.spec.Policy.Timezone.String() != loc.String():
			d.errs.add(f.pos(n), "policy.timezone: %s, but another file declares %s: declare one", n.Value, d.spec.Policy.Timezone)
		default:
			d.spec.Policy.Timezone = loc
		}
	}
	for i, n := range items(field(pol, "rules")) {
		if n = deref(n); n.Kind == yaml.MappingNode {
			d.spec.Policy.Rules = append(d.spec.Policy.Rules, d.rule(f, n, fmt.Sprintf("policy.rules.%d", i), i))
		}
	}
	for i, n := range items(field(pol, "freezes")) {
		if n = deref(n); n.Kind == yaml.MappingNode {
			d.spec.Policy.Freezes = append(d.spec.Policy.Freezes, d.freeze(f, n, fmt.Sprintf("policy.freezes.%d", i), i))
		}
	}
}

// rule decodes one entry of policy.rules.
func (d *decoder) rule(f *file, n *yaml.Node, path string, i int) *Rule {
	r := &Rule{Name: str(field(n, "name")), Pos: f.pos(n), Effect: RuleEffect(str(field(n, "effect"))),
		Reason: str(field(n, "reason")), Shadow: boolean(field(n, "shadow")),
		SeparateDuties: boolean(field(n, "separateDuties")), src: f, whenSrc: scalar(field(n, "when"))}
	if r.Name == "" {
		r.Name = "rule-" + strconv.Itoa(i+1)
	}
	r.Approvers = d.approvers(f, field(n, "approvers"), path+".approvers")
	d.noOnCall(r.Approvers, path+".approvers")
	if a := scalar(field(n, "approvals")); a != nil {
		r.Approvals, _ = strconv.Atoi(a.Value)
	}
	if r.Effect != EffectRequire {
		for _, k := range []string{"approvers", "approvals", "separateDuties"} {
			if kn := keyNode(n, k); kn != nil {
				d.errs.add(f.pos(kn), "%s.%s: only a require rule takes %s (this rule's effect is %s)", path, k, k, r.Effect)
			}
		}
	}
	r.When = d.condition(f, field(n, "when"), path+".when", ruleVars, nil)
	d.ruleReads(f, n, r, path)
	return r
}

// freeze decodes one entry of policy.freezes: a deny rule from from to to.
func (d *decoder) freeze(f *file, n *yaml.Node, path string, i int) *Rule {
	r := &Rule{Name: str(field(n, "name")), Pos: f.pos(n), Effect: EffectDeny, Reason: str(field(n, "reason")),
		When: tmpl.Const(true), fromSrc: scalar(field(n, "from")), toSrc: scalar(field(n, "to")), src: f}
	if r.Name == "" {
		r.Name = "freeze-" + strconv.Itoa(i+1)
	}
	for _, k := range []string{"tools", "agents"} {
		for _, it := range items(field(n, k)) {
			if it = scalar(it); it != nil && d.ref(f, it, strings.TrimSuffix(k, "s")) {
				if k == "tools" {
					r.Tools = append(r.Tools, it.Value)
				} else {
					r.Agents = append(r.Agents, it.Value)
				}
			}
		}
	}
	if wn := field(n, "when"); wn != nil {
		r.whenSrc = scalar(wn)
		r.When = d.condition(f, wn, path+".when", ruleVars, nil)
		d.ruleReads(f, n, r, path)
	}
	return r
}

// ruleReads notes which input fields a rule's when reads.
func (d *decoder) ruleReads(f *file, n *yaml.Node, r *Rule, path string) {
	paths, opaque := r.When.Paths("input")
	for _, p := range paths {
		if len(p) > 0 && !slices.Contains(r.reads, p[0]) {
			r.reads = append(r.reads, p[0])
		}
	}
	if opaque && !d.trusted {
		d.errs.add(f.pos(field(n, "when")), "%s.when: reads input other than by field names (input.NAME): name the fields, so that validate can tell which tools the rule matches", path)
	}
}

// checkRules finishes the rules once every file is decoded: freezes'
// dates in the policy's timezone, and which tools each rule can match,
// type-checking its condition against each tool's input schema.
func (d *decoder) checkRules() {
	loc := d.spec.Policy.Timezone
	if loc == nil {
		loc = time.UTC
	}
	for i, r := range d.spec.Policy.Freezes {
		path := fmt.Sprintf("policy.freezes.%d", i)
		r.From = d.ruleTime(r.src, r.fromSrc, path+".from", loc)
		r.To = d.ruleTime(r.src, r.toSrc, path+".to", loc)
		if !r.From.IsZero() && !r.To.After(r.From) && !r.To.IsZero() {
			d.errs.add(r.src.pos(r.toSrc), "%s.to: %s is not after from (%s)", path, r.To.Format(time.RFC3339), r.From.Format(time.RFC3339))
		}
	}
	for _, r := range d.spec.Policy.All() {
		d.ruleMatches(r)
	}
}

// ruleTime reads a freeze's from or to: RFC 3339, or a date and time
// (2006-01-02T15:04, or 2006-01-02 for midnight) in the policy's timezone.
func (d *decoder) ruleTime(f *file, n *yaml.Node, path string, loc *time.Location) time.Time {
	if n == nil {
		return time.Time{}
	}
	if t, err := time.Parse(time.RFC3339, n.Value); err == nil {
		return t
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, n.Value, loc); err == nil {
			return t
		}
	}
	d.errs.add(f.pos(n), "%s: %q is not a time: want RFC 3339 (2026-12-24T18:00:00+01:00) or a date and time in policy.timezone (2026-12-24T18:00, 2026-12-24)", path, n.Value)
	return time.Time{}
}

// ruleMatches sets the tools rule r can match: those whose input schema
// declares every field it reads, and against which its condition
// type-checks. A rule that reads input and can match no tool is an
// error: it would never apply.
func (d *decoder) ruleMatches(r *Rule) {
	named, byName := r.When.OneOf("tool") // when: tool == "x" && ...
	if len(r.reads) == 0 && !byName {
		return // reads no input: any tool (the condition is checked as written)
	}
	var firstErr error
	r.Matches = []string{}
	for _, name := range slices.Sorted(maps.Keys(d.spec.Tools)) {
		t := d.spec.Tools[name]
		if byName && !slices.ContainsFunc(named, func(n string) bool { return n == name || strings.HasPrefix(n, name+".") }) {
			continue
		}
		if t.MCP != nil {
			r.Matches = append(r.Matches, name)
			continue
		}
		props, _ := t.Input.Doc["properties"].(map[string]any)
		if slices.ContainsFunc(r.reads, func(k string) bool { _, ok := props[k]; return !ok }) {
			continue
		}
		if err := r.When.Check(condTypes(ruleVars, map[string]*Schema{"input": t.Input})); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("with tool %s's input: %w", name, err)
			}
			continue
		}
		r.Matches = append(r.Matches, name)
	}
	if len(r.Matches) == 0 && len(d.spec.Tools) > 0 && !d.trusted {
		if firstErr != nil && r.whenSrc != nil {
			d.placeholderError(r.src, r.whenSrc, fmt.Errorf("rule %s matches no tool: %w", r.Name, firstErr))
			return
		}
		if byName && len(r.reads) == 0 {
			d.errs.add(r.Pos, "rule %s matches no tool: its when names %s, which no tool is", r.Name, strings.Join(named, ", "))
			return
		}
		d.errs.add(r.Pos, "rule %s matches no tool: no tool's input has %s", r.Name, strings.Join(prefixed("input.", r.reads), ", "))
	}
}

// prefixed returns names, each with p before it.
func prefixed(p string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = p + n
	}
	return out
}

// String is the effect's name.
func (e RuleEffect) String() string { return string(e) }
