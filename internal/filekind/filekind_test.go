package filekind

import (
	"io/fs"
	"testing"
)

func TestOf(t *testing.T) {
	for m, want := range map[fs.FileMode]string{
		fs.ModeNamedPipe: "a named pipe", fs.ModeSocket: "a socket", fs.ModeDevice | fs.ModeCharDevice: "a character device",
		fs.ModeDevice: "a block device", fs.ModeDir: "a directory", 0: "a regular file", fs.ModeSymlink: "a file of type L---------",
	} {
		if got := Of(m); got != want {
			t.Errorf("Of(%v) = %q, want %q", m, got, want)
		}
	}
}
