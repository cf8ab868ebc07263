package outbox

import (
	"encoding/json"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/notify"
)

// escalated is what an escalated event says of its step.
type escalated struct {
	notify.EscalationStep
	Notify []notify.Target `json:"notify"`
}

// stepOf is the step an escalated event reports; nil when its data is
// not one.
func stepOf(ev *store.Event) *notify.EscalationStep {
	var x escalated
	if json.Unmarshal(ev.Data, &x) != nil {
		return nil
	}
	return &x.EscalationStep
}

// escalationTargets are the targets of an escalated event: the step's
// own notify: targets, for the spec's outbox, when it declares some;
// else the run's (targets).
func (b *Outbox) escalationTargets(ev *store.Event, targets []notify.Target) []notify.Target {
	var x escalated
	if b.o.Source != store.SourceSpec || json.Unmarshal(ev.Data, &x) != nil || len(x.Notify) == 0 {
		return targets
	}
	return x.Notify
}
