package token

import (
	"strings"
	"testing"
)

func TestNewParse(t *testing.T) {
	s, h := New()
	if !strings.HasPrefix(s, Prefix) || len(s) != len(Prefix)+43 {
		t.Fatalf("token %q: want agt_ and 43 characters", s)
	}
	got, err := Parse(s)
	if err != nil || !Equal(got, h) {
		t.Fatalf("Parse(New()) = %x, %v; want %x", got, err, h)
	}
	if s2, _ := New(); s2 == s {
		t.Fatal("two tokens are the same")
	}
	if len(ID(h)) != 12 {
		t.Fatalf("ID %q: want 12 hex digits", ID(h))
	}
	for _, bad := range []string{"", "agt_", s[:len(s)-1], "xyz_" + s[4:], s[:10] + "!" + s[11:]} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): want an error", bad)
		}
	}
}
