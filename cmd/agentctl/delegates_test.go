package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAdminDelegates: the administrator's file is honoured only when it
// is root's and no one else may write it.
func TestAdminDelegates(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make files of other owners")
	}
	dir := t.TempDir()
	write := func(name string, mode os.FileMode, uid int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("delegates: [chatops-bot, ci]\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, -1); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := readAdminDelegates(write("good.yaml", 0o644, 0))
	if err != nil || !slices.Equal(got, []string{"chatops-bot", "ci"}) {
		t.Errorf("root's file: %v, %v", got, err)
	}
	for name, f := range map[string]string{
		"others may write it": write("loose.yaml", 0o666, 0),
		"its group may write": write("group.yaml", 0o664, 0),
		"not root's":          write("users.yaml", 0o644, 65534),
	} {
		if got, err := readAdminDelegates(f); err == nil || !strings.Contains(err.Error(), "is not honoured") {
			t.Errorf("%s: %v, %v: want it refused", name, got, err)
		}
	}
	// A directory others may write: they could replace the file.
	loose := filepath.Join(dir, "loose")
	if err := os.Mkdir(loose, 0o777); err != nil || os.Chmod(loose, 0o777) != nil {
		t.Fatal(err)
	}
	if err := os.Rename(write("good2.yaml", 0o644, 0), filepath.Join(loose, "config.yaml")); err != nil {
		t.Fatal(err)
	}
	if got, err := readAdminDelegates(filepath.Join(loose, "config.yaml")); err == nil || !strings.Contains(err.Error(), "others may replace it") {
		t.Errorf("in a directory others may write: %v, %v: want it refused", got, err)
	}
	if got, err := readAdminDelegates(filepath.Join(dir, "none.yaml")); err != nil || got != nil {
		t.Errorf("no file: %v, %v", got, err)
	}
}
