package duration

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	day := 24 * time.Hour
	for in, want := range map[string]time.Duration{
		"30s": 30 * time.Second, "1h30m": 90 * time.Minute, "90d": 90 * day, "1d12h": 36 * time.Hour,
		"0.5d": 12 * time.Hour, "-1d": -day, "2d30m": 2*day + 30*time.Minute, "0": 0,
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "d", "1x", "1d-2h", "1e3d", "1dd", "9999999999999d", "d1h"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): want an error", bad)
		}
	}
	if got := Format(90 * day); got != "90d" {
		t.Errorf("Format(90d) = %q", got)
	}
	if got := Format(90 * time.Minute); got != "1h30m0s" {
		t.Errorf("Format(90m) = %q", got)
	}
}
