package health

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/engine/store"
)

// TestOutage: an outage is logged once when it begins and once when it
// ends, however many attempts fail meanwhile; a failure of another kind
// is logged each time; a raw driver error counts once Classify says it
// is the database being unavailable.
func TestOutage(t *testing.T) {
	var buf bytes.Buffer
	raw := errors.New("conn closed")
	o := &Outage{Log: slog.New(slog.NewTextHandler(&buf, nil)), What: "work", Classify: func(err error) error {
		if errors.Is(err, raw) {
			return fmt.Errorf("%w: %v", store.ErrCannotConnect, err)
		}
		return err
	}}
	for range 50 {
		o.Failed(slog.LevelError, raw)
	}
	o.Failed(slog.LevelError, errors.New("run 01A: tool exploded"))
	o.Failed(slog.LevelError, errors.New("run 01B: tool exploded"))
	o.Worked()
	o.Worked()
	o.Failed(slog.LevelError, raw)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`level=ERROR msg="work failed: the database cannot be used; trying again quietly until it can" err="cannot connect to the database: conn closed"`,
		`level=ERROR msg="work failed" err="run 01A: tool exploded"`,
		`level=ERROR msg="work failed" err="run 01B: tool exploded"`,
		`level=INFO msg="work works again" after=`,
		`level=ERROR msg="work failed: the database cannot be used;`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d: %s\nwant it to hold %s", i+1, lines[i], w)
		}
	}
	if !strings.Contains(lines[3], "failures=50") {
		t.Errorf("the end of the outage: %s; want failures=50", lines[3])
	}
}
