package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/engine"
)

// policyCase is one sample call of a policy test file, with what its
// verdict must be.
type policyCase struct {
	Name    string            `yaml:"name"`
	Agent   string            `yaml:"agent"`
	Tool    string            `yaml:"tool"`
	Input   map[string]any    `yaml:"input"`
	At      string            `yaml:"at"`
	Starter string            `yaml:"starter"`
	Labels  map[string]string `yaml:"labels"`
	Expect  struct {
		Effect    string   `yaml:"effect"`
		Approvers []string `yaml:"approvers"`
		Approvals int      `yaml:"approvals"`
	} `yaml:"expect"`
	line, col int
	at        time.Time
}

// policyFile is a policy test file: a spec (relative to the file) and
// its cases.
type policyFile struct {
	Spec  string       `yaml:"spec"`
	Cases []policyCase `yaml:"cases"`
}

func (a *app) policyTestCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "test FILE",
		Short: "Run a table of sample calls against a spec's policy rules",
		Long: `policy test reads FILE: a spec (a path relative to FILE) and cases, each a
sample call (agent, tool, input, at, starter, labels) with the verdict it
expects (effect: deny, require or allow; approvers and approvals for a
require). It prints each case's verdict, the rule that decided and why.
It exits 0 when every case holds, 1 when one does not, 2 when FILE or the
spec is invalid (file:line:col).`,
		Example: `  agentctl policy test policy/ops-cases.yaml`,
		Args:    needsOne("a policy test file"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			pf, err := readPolicyFile(argv[0])
			if err != nil {
				return inputErr(err)
			}
			s, err := a.loadSpec([]string{filepath.Join(filepath.Dir(argv[0]), pf.Spec)})
			if err != nil {
				return err
			}
			// Every case is checked before any is reported: a bad one
			// (an unknown agent or tool) stops the file at once.
			verdicts := make([]engine.Verdict, len(pf.Cases))
			var bad []string
			for i, c := range pf.Cases {
				v, err := engine.Decide(s, engine.RuleCall{Tool: c.Tool, Agent: c.Agent, Input: c.Input, Starter: c.Starter, At: c.at, Labels: c.Labels})
				if err != nil {
					bad = append(bad, fmt.Sprintf("%s:%d:%d: case %q: %v", argv[0], c.line, c.col, c.Name, err))
				}
				verdicts[i] = v
			}
			if len(bad) > 0 {
				return inputErr(errors.New(strings.Join(bad, "\n")))
			}
			failed := 0
			for i, c := range pf.Cases {
				v := verdicts[i]
				if why := mismatch(c, v); why != "" {
					failed++
					fmt.Fprintf(a.stdout, "FAIL  %s: %s\n      %s\n", c.Name, why, v.Why)
					continue
				}
				fmt.Fprintf(a.stdout, "ok    %s: %s\n      %s\n", c.Name, v.Effect, v.Why)
				for _, sh := range v.Shadow {
					fmt.Fprintf(a.stdout, "      shadow: would be %s\n", sh.Phrase())
				}
			}
			fmt.Fprintf(a.stdout, "%d %s, %d failed\n", len(pf.Cases), plural(len(pf.Cases), "case", "cases"), failed)
			if failed > 0 {
				return &exitErr{code: exitError}
			}
			return nil
		},
	}
}

// mismatch says how verdict v differs from what case c expects, or "".
func mismatch(c policyCase, v engine.Verdict) string {
	want := c.Expect
	var diffs []string
	if v.Effect != want.Effect {
		diffs = append(diffs, fmt.Sprintf("effect %s, want %s", v.Effect, want.Effect))
	}
	if want.Approvers != nil && !sameSet(v.Approvers, want.Approvers) {
		diffs = append(diffs, fmt.Sprintf("approvers [%s], want [%s]", strings.Join(v.Approvers, ", "), strings.Join(want.Approvers, ", ")))
	}
	if want.Approvals > 0 && max(v.Approvals, 1) != want.Approvals {
		diffs = append(diffs, fmt.Sprintf("%d approvals, want %d", max(v.Approvals, 1), want.Approvals))
	}
	return strings.Join(diffs, "; ")
}

// sameSet reports whether a and b hold the same names.
func sameSet(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// readPolicyFile reads and checks a policy test file; an error names
// the place (file:line:col).
func readPolicyFile(name string) (*policyFile, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	at := func(n *yaml.Node, format string, args ...any) error {
		return fmt.Errorf("%s:%d:%d: %s", name, n.Line, n.Column, fmt.Sprintf(format, args...))
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:1:1: want a mapping with spec and cases", name)
	}
	root := doc.Content[0]
	var pf policyFile
	if err := root.Decode(&pf); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s: %s", name, strings.Join(te.Errors, "; "))
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if pf.Spec == "" {
		return nil, at(root, "spec: missing: name the spec file, relative to this file")
	}
	cases := policyNode(root, "cases")
	if cases == nil || len(pf.Cases) == 0 {
		return nil, at(root, "cases: missing: give at least one case")
	}
	for i := range pf.Cases {
		if err := checkCase(&pf.Cases[i], cases.Content[i], at); err != nil {
			return nil, err
		}
	}
	return &pf, nil
}

// checkCase checks one case at node n, and reads its time.
func checkCase(c *policyCase, n *yaml.Node, at func(*yaml.Node, string, ...any) error) error {
	c.line, c.col = n.Line, n.Column
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if !slices.Contains([]string{"name", "agent", "tool", "input", "at", "starter", "labels", "expect"}, k) {
			return at(n.Content[i], "unknown key %q in a case (want name, agent, tool, input, at, starter, labels, expect)", k)
		}
	}
	switch {
	case c.Name == "":
		return at(n, "a case needs a name")
	case c.Agent == "" || c.Tool == "":
		return at(n, "case %q: needs agent and tool", c.Name)
	case !slices.Contains([]string{"deny", "require", "allow"}, c.Expect.Effect):
		return at(n, "case %q: expect.effect %q: want deny, require or allow", c.Name, c.Expect.Effect)
	}
	c.at = time.Now()
	if c.At != "" {
		t, err := time.Parse(time.RFC3339, c.At)
		if err != nil {
			return at(policyNode(n, "at"), "case %q: at %q: want an RFC 3339 time (2026-12-05T10:00:00Z)", c.Name, c.At)
		}
		c.at = t
	}
	return nil
}

// policyNode is the value of key in mapping n, or nil.
func policyNode(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
