package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the bad-input corpus's expected output")

// TestBadInput runs the bad-input corpus, testdata/badinput/*.txtar. Each
// archive's comment is the command line (after "agentctl"; single quotes
// group words), then "exit N"; its files are written to a fresh directory
// that is the working directory, with an empty database; the file named
// "stderr" is the expected error output, exactly. go test -update
// rewrites stderr and exit.
func TestBadInput(t *testing.T) {
	dir, err := filepath.Abs("../../testdata/badinput")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("the corpus has %d cases, want at least 40", len(files))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(ar.Comment)), "\n")
			if len(lines) < 2 || !strings.HasPrefix(lines[0], "agentctl ") || !strings.HasPrefix(lines[len(lines)-1], "exit ") {
				t.Fatalf("the comment must be the command line, then exit N; got %q", ar.Comment)
			}
			args := splitArgs(strings.TrimPrefix(lines[0], "agentctl "))
			wantCode, err := strconv.Atoi(strings.TrimPrefix(lines[len(lines)-1], "exit "))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			var wantErr []byte
			for _, f := range ar.Files {
				if f.Name == "stderr" {
					wantErr = f.Data
					continue
				}
				p := filepath.Join(dir, f.Name)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, f.Data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			t.Chdir(dir)
			// --db's default would otherwise reset dbPath: never the
			// user's own database.
			t.Setenv("AGENTCTL_DB", filepath.Join(dir, "agentctl.db"))
			t.Setenv("XDG_STATE_HOME", dir)
			var stdout, stderr bytes.Buffer
			a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, dbPath: filepath.Join(dir, "agentctl.db")}
			root := a.rootCmd()
			root.SetArgs(args)
			code := a.report(root.ExecuteContext(context.Background()))
			a.close()
			if *update {
				ar.Comment = []byte(lines[0] + "\nexit " + strconv.Itoa(code) + "\n")
				var kept []txtar.File
				for _, f := range ar.Files {
					if f.Name != "stderr" {
						kept = append(kept, f)
					}
				}
				ar.Files = append(kept, txtar.File{Name: "stderr", Data: stderr.Bytes()})
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if code != wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, wantCode, stderr.Bytes())
			}
			if !bytes.Equal(stderr.Bytes(), wantErr) {
				t.Errorf("stderr:\n%s\nwant:\n%s", stderr.Bytes(), wantErr)
			}
			if code == 0 || code == 3 {
				t.Errorf("bad input accepted (exit %d)", code)
			}
		})
	}
}

// splitArgs splits a command line at spaces; single quotes group.
func splitArgs(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, any := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, any = !quoted, true
		case r == ' ' && !quoted:
			if any {
				out = append(out, cur.String())
				cur.Reset()
				any = false
			}
		default:
			cur.WriteRune(r)
			any = true
		}
	}
	if any {
		out = append(out, cur.String())
	}
	return out
}
