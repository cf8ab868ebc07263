package main

import (
	"fmt"
	"github.com/agentctl/agentctl/spec"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine/store"
)

// policyCmd groups the commands about a spec's policy rules.
func (a *app) policyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Test a spec's policy rules, and explain what they decided",
		Long: `Policy rules (policy.rules and policy.freezes in a spec) deny, require or
allow tool calls before their tools decide. policy test runs a table of
sample calls against them, for CI; policy explain says what they decided
for a real call. See docs/rules.md.`,
	}
	cmd.AddCommand(a.policyTestCmd(), a.policyExplainCmd())
	return cmd
}

// printRules prints, under a call, the policy rule that decided it and
// the shadow rules that matched it.
func printRules(w io.Writer, pad string, g *store.Gate) {
	if g == nil {
		return
	}
	if g.Rule != nil && g.Verdict != store.GateDenied {
		fmt.Fprintf(w, "%spolicy: %s\n", pad, oneLine(g.Rule.Phrase(), 300))
	}
	for _, s := range g.Shadow {
		fmt.Fprintf(w, "%sshadow: would be %s (not enforced)\n", pad, oneLine(s.Phrase(), 300))
	}
}

// printRuleMatches says which tools each policy rule can match.
func printRuleMatches(w io.Writer, s *spec.Spec) {
	for _, r := range s.Policy.All() {
		which := "every tool"
		switch {
		case len(r.Tools) > 0:
			which = strings.Join(r.Tools, ", ")
		case r.Matches != nil:
			which = strings.Join(r.Matches, ", ")
		}
		fmt.Fprintf(w, "rule %s (%s) can match: %s\n", r.Name, r.Effect, which)
	}
}
