package engine

import (
	"os"
	"regexp"
	"testing"
)

// Every event type the engine declares has its row in docs/approvals.md's
// table of events: the reference cannot drift from the code.
func TestEventTypesDocumented(t *testing.T) {
	src, err := os.ReadFile("events.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/approvals.md")
	if err != nil {
		t.Fatal(err)
	}
	declared := regexp.MustCompile(`store\.EventType = "([a-z-]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(declared) < 5 {
		t.Fatalf("found %d event types in events.go", len(declared))
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\| `").FindAllStringSubmatch(string(doc), -1) {
		rows[m[1]] = true
	}
	for _, m := range declared {
		if !rows[m[1]] {
			t.Errorf("event type %s has no row in docs/approvals.md's table of events", m[1])
		}
	}
}
