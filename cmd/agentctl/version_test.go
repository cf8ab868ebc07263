package main

import "testing"

// TestPseudoRevision reads the commit of a pseudo-version, as go install
// of a module version leaves it, and nothing of another version.
func TestPseudoRevision(t *testing.T) {
	for _, c := range []struct{ v, rev, at string }{
		{"v0.0.0-20261201093000-0123456789ab", "0123456789ab", "2026-12-01T09:30:00Z"},
		{"v1.2.4-0.20261201093000-0123456789ab", "0123456789ab", "2026-12-01T09:30:00Z"},
		{"v1.2.4-pre.0.20261201093000-0123456789ab+incompatible", "0123456789ab", "2026-12-01T09:30:00Z"},
		{"v1.2.3", "", ""},
		{"(devel)", "", ""},
		{"v1.2.3-rc-1", "", ""},
		{"v0.0.0-20261301093000-0123456789ab", "", ""},
	} {
		rev, at := pseudoRevision(c.v)
		if rev != c.rev || at != c.at {
			t.Errorf("pseudoRevision(%q) = %q, %q; want %q, %q", c.v, rev, at, c.rev, c.at)
		}
	}
}
