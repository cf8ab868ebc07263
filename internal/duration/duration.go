// Package duration parses the durations agentctl accepts everywhere:
// Go's (300ms, 1.5h, 2h45m) plus days, as 90d or 1d12h. A day is 24
// hours.
package duration

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Parse parses a duration such as 30s, 1h30m, 90d or 1d12h.
func Parse(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	neg := strings.HasPrefix(t, "-")
	t = strings.TrimLeft(t, "+-")
	i := strings.IndexByte(t, 'd')
	if i < 0 {
		return time.ParseDuration(s)
	}
	days, err := strconv.ParseFloat(t[:i], 64)
	if err != nil || t[:i] == "" || strings.ContainsAny(t[:i], "eE") {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	d := time.Duration(days * float64(24*time.Hour))
	if days > float64(1<<63-1)/float64(24*time.Hour) {
		return 0, fmt.Errorf("invalid duration %q: too long", s)
	}
	if rest := t[i+1:]; rest != "" {
		more, err := time.ParseDuration(rest)
		if err != nil || strings.HasPrefix(rest, "-") || strings.HasPrefix(rest, "+") {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		d += more
	}
	if neg {
		d = -d
	}
	return d, nil
}

// Format writes d with days when it is a whole number of them (90d),
// else as Go does.
func Format(d time.Duration) string {
	day := 24 * time.Hour
	if d != 0 && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}

// Value is a flag value (pflag.Value) holding a duration that may be
// given in days.
type Value struct{ D *time.Duration }

// String implements pflag.Value.
func (v Value) String() string {
	if v.D == nil {
		return "0s"
	}
	return Format(*v.D)
}

// Set implements pflag.Value.
func (v Value) Set(s string) error {
	d, err := Parse(s)
	if err != nil {
		return err
	}
	*v.D = d
	return nil
}

// Type implements pflag.Value.
func (v Value) Type() string { return "duration" }

// Short writes d as Format does, without the zero units Go's form ends
// with: 10m, 2h, 1h30m, 90d.
func Short(d time.Duration) string {
	s := Format(d)
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
