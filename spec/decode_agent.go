package spec

import (
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"
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
		Approvers:           approvers(field(v, "approvers")),
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
	return a
}
