package names

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, ok := range []string{"alice", "chatops-bot", "o'brien", "jürgen"} {
		if err := Check(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a b", "a\nb", "a\rb", "a\x1b[2Kb", "a,b", "group:sre", "a\u200bb", "\xff", "\ufffd", "a\u3164", "\u2800", "\u0301a", "a\u034fb", "a\u202eb", "a\u2028b", strings.Repeat("a", MaxLen+1)} {
		if Check(bad) == nil {
			t.Errorf("%q passes", bad)
		}
	}
}
