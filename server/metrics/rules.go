package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentctl/agentctl/engine"
)

var _ engine.RuleObserver = (*Metrics)(nil)

// newRules registers the counter of policy rules' decisions.
func newRules(reg *prometheus.Registry) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentctl_policy_rule_matches_total",
		Help: "Tool calls a policy rule decided at the gate, by rule, effect (deny, require, allow) and shadow (true: recorded, not enforced).",
	}, []string{"rule", "effect", "shadow"})
	reg.MustRegister(c)
	return c
}

// Rule counts a policy rule's decision on a call (engine.RuleObserver).
func (m *Metrics) Rule(name, effect string, shadow bool) {
	m.rules.WithLabelValues(name, effect, strconv.FormatBool(shadow)).Inc()
}
