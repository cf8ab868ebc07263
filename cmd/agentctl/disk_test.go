package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"
)

// canMount reports whether this process may mount a tmpfs (root, and a
// container that allows it): the [tmpfs] condition.
func canMount() bool {
	dir, err := os.MkdirTemp("", "agentctl-mount")
	if err != nil {
		return false
	}
	defer os.Remove(dir)
	if exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).Run() != nil {
		return false
	}
	return exec.Command("umount", dir).Run() == nil
}

// smalldisk mounts a tmpfs of SIZE (as mount -o size= takes it) on DIR,
// unmounted when the scenario ends: a disk a scenario can fill.
func smalldisk(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: smalldisk DIR SIZE")
	}
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+args[1], "tmpfs", dir).CombinedOutput(); err != nil {
		ts.Fatalf("mount: %v\n%s", err, out)
	}
	ts.Defer(func() { exec.Command("umount", "-l", dir).Run() })
}

// filldisk fills the file system of DIR up to KB kilobytes left, with the
// file DIR/fill (filldisk DIR -: remove it).
func filldisk(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: filldisk DIR KB|-")
	}
	fill := filepath.Join(ts.MkAbs(args[0]), "fill")
	if args[1] == "-" {
		ts.Check(os.Remove(fill))
		return
	}
	keep, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	var st syscall.Statfs_t
	ts.Check(syscall.Statfs(filepath.Dir(fill), &st))
	free := int64(st.Bavail) * int64(st.Bsize)
	f, err := os.Create(fill)
	ts.Check(err)
	defer f.Close()
	buf := make([]byte, 4096)
	for n := free - keep*1024; n > 0; n -= int64(len(buf)) {
		if _, err := f.Write(buf[:min(int64(len(buf)), n)]); err != nil {
			break // full already
		}
	}
}
