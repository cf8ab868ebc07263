package spec

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/notify"
)

func (d *decoder) agent(f *file, k, v *yaml.Node) *Agent {
	v = deref(v)
	a := &Agent{
		Name:                k.Value,
		Pos:                 f.pos(k),
		Description:         str(field(v, "description")),
		Model:               str(field(v, "model")),
		Instructions:        str(field(v, "instructions")),
		MaxSteps:            DefaultMaxSteps,
		RequireToolApproval: boolean(field(v, "requireToolApproval")),
		AutoResume:          boolean(field(v, "autoResume")),
		Approvers:           d.approvers(f, field(v, "approvers"), "agents."+k.Value+".approvers"),
		SeparateDuties:      boolean(field(v, "separateDuties")),
	}
	d.ref(f, field(v, "model"), "model")
	for _, tn := range items(field(v, "tools")) {
		if d.ref(f, tn, "tool") {
			a.Tools = append(a.Tools, tn.Value)
		}
	}
	if n := scalar(field(v, "maxSteps")); n != nil {
		a.MaxSteps, _ = strconv.Atoi(n.Value)
	}
	a.MaxDepth = DefaultMaxDepth
	if n := scalar(field(v, "maxDepth")); n != nil {
		a.MaxDepth, _ = strconv.Atoi(n.Value)
	}
	for _, sn := range items(field(v, "agents")) {
		if d.ref(f, sn, "agent") {
			a.Agents = append(a.Agents, sn.Value)
			a.SubPos = append(a.SubPos, f.pos(sn))
			if slices.Contains(a.Tools, sn.Value) {
				d.errs.add(f.pos(sn), "agent %q has a tool and a sub-agent named %q: a model cannot tell them apart", a.Name, sn.Value)
			}
		}
	}
	a.ApprovalTimeout = d.duration(f, field(v, "approvalTimeout"), "agents."+a.Name+".approvalTimeout")
	a.Notify = d.notify(f, field(v, "notify"), "agents."+a.Name+".notify")
	a.Escalation = d.escalation(f, field(v, "escalation"), "agents."+a.Name+".escalation")
	return a
}

// notify decodes an agent's notify: list; the schema has checked its
// shape, Target.Check what the schema cannot say.
func (d *decoder) notify(f *file, n *yaml.Node, path string) []notify.Target {
	var out []notify.Target
	for i, it := range items(n) {
		var t notify.Target
		if err := it.Decode(&t); err != nil {
			continue // of the wrong shape: the schema reports it
		}
		for _, p := range t.Check() {
			at := it
			for k := range strings.SplitSeq(p.Field, ".") {
				if x := field(at, k); k != "" && x != nil {
					at = x
				}
			}
			where := fmt.Sprintf("%s[%d]", path, i)
			if p.Field != "" {
				where += "." + p.Field
			}
			d.errs.add(f.pos(at), "%s: %s", where, p.Msg)
		}
		out = append(out, t)
	}
	return out
}
