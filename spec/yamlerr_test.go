package spec

import (
	"strings"
	"testing"
)

func TestYAMLHints(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		// A tab indents a line.
		{"version: 1\nmodels:\n\tm: {provider: scripted}\n", "a.yaml:3:1: invalid YAML: this line is indented with a tab; YAML indents with spaces only"},
		{"version: 1\nmodels:\n  m:\n    provider: scripted\n  \tturns: []\n", "a.yaml:5:3: invalid YAML: this line is indented with a tab; YAML indents with spaces only"},
		// A key one space too little, far below where yaml.v3 reports.
		{"version: 1\ntools:\n  a:\n    output: ok\n  b:\n    output: x\n  c:\n    output: y\n   d:\n    output: z\n",
			"a.yaml:9:4: invalid YAML: did not find expected key (reported at line 2); likely cause: this line is indented 3 spaces, unlike any block around it (2 or 4)"},
		// In an exec block: one space too little under command.
		{"version: 1\ntools:\n  a:\n    exec:\n      command: [a]\n     timeout: 5s\n",
			"a.yaml:6:6: invalid YAML: did not find expected key (reported at line 3); likely cause: this line is indented 5 spaces, unlike any block around it (4 or 6)"},
		// List items open a block at their content.
		{"version: 1\nmodels:\n  m:\n    turns:\n      - text: a\n        toolCalls: []\n         extra: 1\n",
			"a.yaml:7:10: invalid YAML: did not find expected key (reported at line 4); likely cause: this line is indented deeper than line 6, whose value is already given"},
		// Block scalars and flow collections over lines are not blocks.
		{"version: 1\ntools:\n  a:\n    output: |\n       weird\n     indent\n    description: {\n  x: 1}\n   b: 1\n",
			"a.yaml:9:4: invalid YAML: did not find expected key (reported at line 3); likely cause: this line is indented 3 spaces, unlike any block around it (2 or 4)"},
		// No line is inconsistent: yaml.v3's report stands.
		{"version: 1\nmodels:\n  m: {provider: scripted\n", "a.yaml:2: invalid YAML: did not find expected ',' or '}'"},
	} {
		_, err := Load([]Source{{Name: "a.yaml", Data: []byte(tc.src), Dir: "."}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\ngot  %v\nwant %s", tc.src, err, tc.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"approvers", "description", "exec", "requireApproval", "maxSteps", "models"}
	for name, want := range map[string]string{
		"requireAproval": "requireApproval", "modles": "models", "maxStep": "maxSteps",
		"RequireApproval": "requireApproval", "frobnicate": "", "ex": "", "exce": "exec", "zz": "",
	} {
		if got := suggest(name, known); got != want {
			t.Errorf("suggest(%q) = %q, want %q", name, got, want)
		}
	}
}
