package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManPages writes a man page per command (agentctl man DIR:
// agentctl.1, agentctl-approve.1, ...), checking that every page it
// counts is there with a NAME section.
func TestManPages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man")
	a := &app{stdin: strings.NewReader(""), stdout: os.Stdout, stderr: os.Stderr, stop: make(chan struct{})}
	n, err := writeMan(a.rootCmd(), dir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != n {
		t.Errorf("%d pages counted, %d written", n, len(files))
	}
	for _, name := range []string{"agentctl.1", "agentctl-approve.1", "agentctl-serve.1", "agentctl-version.1", "agentctl-man.1"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), ".SH NAME") {
			t.Errorf("%s has no NAME section", name)
		}
	}
}
