package file

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/spec/tmpl"
	"github.com/agentctl/agentctl/toolkits"
)

// A secret straddling the MaxRead cut of a read is cut whole before the
// content is truncated: no prefix of it is kept.
func TestReadCapRedactsFirst(t *testing.T) {
	const secret = "SECRETVALUEABCDEFGHIJ"
	dir := t.TempDir()
	data := strings.Repeat("0", MaxRead-15) + secret + "tail"
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := tmpl.Parse("f", tmpl.Vars{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := New(&spec.File{Root: dir, Op: "read", Path: p}).Do(context.Background(), toolkits.Call{Env: map[string]string{"E": secret}})
	if err != nil {
		t.Fatal(err)
	}
	if end := res.Content[MaxRead-40:]; strings.Contains(end, "SECRET") || !strings.Contains(end, "[env.E]\n[... truncated at") {
		t.Errorf("content ends %q", end)
	}
}
