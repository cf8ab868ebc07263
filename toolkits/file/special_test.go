//go:build unix

package file

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/spec/tmpl"
	"github.com/agentctl/agentctl/toolkits"
)

// do runs op on path in root, failing the test if it takes a second.
func do(t *testing.T, ctx context.Context, root, op, path, content string) (toolkits.Result, error) {
	t.Helper()
	f := &spec.File{Root: root, Op: op}
	var err error
	if f.Path, err = tmpl.Parse(path, tmpl.Vars{}); err != nil {
		t.Fatal(err)
	}
	if f.Content, err = tmpl.Parse(content, tmpl.Vars{}); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		res toolkits.Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := New(f).Do(ctx, toolkits.Call{})
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		return a.res, a.err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s %s: blocked", op, path)
	}
	return toolkits.Result{}, nil
}

// A named pipe, a socket and a device are refused by every op, naming
// the path, and never block.
func TestSpecialFilesRefused(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, c := range []struct{ root, op, path, want string }{
		{dir, "read", "pipe", "read pipe: not a regular file (a named pipe)"},
		{dir, "write", "pipe", "write pipe: not a regular file (a named pipe)"},
		{dir, "list", "pipe", "list pipe: not a directory (a named pipe)"},
		{dir, "read", "sock", "read sock: not a regular file (a socket)"},
		{dir, "write", "sock", "write sock: not a regular file (a socket)"},
		{"/dev", "read", "null", "read null: not a regular file (a character device)"},
		{"/dev", "write", "null", "write null: not a regular file (a character device)"},
	} {
		_, err := do(t, context.Background(), c.root, c.op, c.path, "x")
		if err == nil || err.Error() != c.want {
			t.Errorf("%s %s: %v, want %q", c.op, c.path, err, c.want)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "pipe")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v %v", fi, err)
	}
}

// A read or a write stops when its context ends: a write then leaves
// the file as it was, and no temporary file.
func TestCanceled(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("before"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := do(t, ctx, dir, "read", "f", ""); !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "read f: ") {
		t.Errorf("read: %v", err)
	}
	if _, err := do(t, ctx, dir, "write", "f", strings.Repeat("x", 3*chunk)); !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "write f: ") {
		t.Errorf("write: %v", err)
	}
	if _, err := do(t, ctx, dir, "list", ".", ""); !errors.Is(err, context.Canceled) {
		t.Errorf("list: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "before" || len(ents) != 1 {
		t.Errorf("after a canceled write: %d bytes, %d entries", len(b), len(ents))
	}
}

// A write creates a new temporary file each time: a named pipe where one
// was never blocks it.
func TestWriteTemporaryIsNew(t *testing.T) {
	dir := t.TempDir()
	res, err := do(t, context.Background(), dir, "write", "a/f", "hello")
	if err != nil || res.Content != "wrote 5 bytes to a/f" {
		t.Fatalf("write: %v %v", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a", "f")); err != nil || string(b) != "hello" {
		t.Errorf("a/f: %q %v", b, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "a")); len(ents) != 1 {
		t.Errorf("a holds %d entries", len(ents))
	}
}
