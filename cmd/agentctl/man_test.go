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

// docs/reference/cli is the command tree in Markdown, as make docs
// writes it: the CLI reference cannot drift from the commands.
func TestCLIReferenceUpToDate(t *testing.T) {
	dir := t.TempDir()
	a := &app{stdin: strings.NewReader(""), stdout: os.Stdout, stderr: os.Stderr, stop: make(chan struct{})}
	if _, err := writeMarkdown(a.rootCmd(), dir); err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	have, _ := filepath.Glob("../../docs/reference/cli/*.md")
	if len(have) != len(want) {
		t.Fatalf("docs/reference/cli has %d pages, the commands make %d: run make docs", len(have), len(want))
	}
	for _, w := range want {
		g, err := os.ReadFile(filepath.Join("../../docs/reference/cli", filepath.Base(w)))
		if err != nil {
			t.Fatalf("%v: run make docs", err)
		}
		if b, _ := os.ReadFile(w); string(b) != string(g) {
			t.Errorf("docs/reference/cli/%s is not what the commands make: run make docs", filepath.Base(w))
		}
	}
}
