package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra/doc"
)

var manDir = flag.String("man", "", "write the man pages to this directory (make man)")

// TestManPages writes a man page per command (make man: agentctl.1,
// agentctl-approve.1, ...); without -man, into a temporary directory,
// checking that every command has one that names its examples.
func TestManPages(t *testing.T) {
	dir := *manDir
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a := &app{stdin: strings.NewReader(""), stdout: os.Stdout, stderr: os.Stderr, stop: make(chan struct{})}
	root := a.rootCmd()
	root.DisableAutoGenTag = true // pages that change only when the commands do
	hdr := &doc.GenManHeader{Title: "AGENTCTL", Section: "1", Source: "agentctl", Manual: "agentctl manual"}
	if err := doc.GenManTree(root, hdr, dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"agentctl.1", "agentctl-approve.1", "agentctl-serve.1", "agentctl-version.1"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), ".SH NAME") {
			t.Errorf("%s has no NAME section", name)
		}
	}
}
