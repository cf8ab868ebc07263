package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/agentctl/agentctl/internal/filekind"
)

// ErrNotRegular reports a path to read or replace that names something
// other than a regular file: a named pipe, a device, a socket, a
// directory.
var ErrNotRegular = errors.New("not a regular file")

// errNotDir reports a path to list that names no directory.
var errNotDir = errors.New("not a directory")

// chunk is how much is read or written between two looks at the context.
const chunk = 64 << 10

// read returns the first max bytes of the regular file rel (p as the
// model gave it), stopping when ctx ends.
func read(ctx context.Context, root *os.Root, rel, p string, max int64) ([]byte, error) {
	f, err := open(root, rel, p, "read", false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var data []byte
	buf := make([]byte, chunk)
	for int64(len(data)) < max {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		n, err := f.Read(buf[:min(int64(len(buf)), max-int64(len(data)))])
		data = append(data, buf[:n]...)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, explain(p, err)
		}
	}
	return data, nil
}

// write replaces the file rel atomically: a new temporary file beside
// it, renamed over it. What rel names, if anything, must be a regular
// file. When ctx ends first, the temporary file is removed and rel is
// left as it was.
func write(ctx context.Context, root *os.Root, rel, p, content string) error {
	if fi, err := root.Stat(rel); err == nil {
		if err := check("write", p, fi.Mode(), false); err != nil {
			return err
		}
	}
	if dir := path.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return explain(p, err)
		}
	}
	f, tmp, err := createTemp(root, rel)
	if err != nil {
		return explain(p, err)
	}
	for rest := content; rest != "" && err == nil; {
		if err = ctx.Err(); err == nil {
			n := min(len(rest), chunk)
			_, err = f.WriteString(rest[:n])
			rest = rest[n:]
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = ctx.Err() // the last moment to leave rel untouched
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		_ = root.Remove(tmp)
		if ctx.Err() != nil {
			return fmt.Errorf("write %s: %w", p, ctx.Err())
		}
		return explain(p, err)
	}
	return nil
}

// createTemp creates a new regular file beside rel, never one already
// there (a named pipe put in its place would block the open).
func createTemp(root *os.Root, rel string) (*os.File, string, error) {
	for range 10 {
		tmp := fmt.Sprintf("%s.agentctl-%d-%08x.tmp", rel, os.Getpid(), rand.Uint32())
		f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NONBLOCK, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			return f, tmp, err
		}
	}
	return nil, "", fmt.Errorf("create a temporary file beside %s: %w", rel, fs.ErrExist)
}

// list returns the names in the directory rel, sorted, one a line, with
// a "/" after a directory's; it stops when ctx ends.
func list(ctx context.Context, root *os.Root, rel, p string) (string, error) {
	f, err := open(root, rel, p, "list", true)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var ents []os.DirEntry
	for {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("list %s: %w", p, err)
		}
		more, err := f.ReadDir(1024)
		ents = append(ents, more...)
		if errors.Is(err, io.EOF) || err == nil && len(more) == 0 {
			break
		}
		if err != nil {
			return "", explain(p, err)
		}
	}
	slices.SortFunc(ents, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var b strings.Builder
	for _, e := range ents {
		b.WriteString(e.Name())
		if e.IsDir() {
			b.WriteByte('/')
		}
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// open opens rel for op, refusing anything but a regular file (or, for
// dir, a directory). It looks before opening, since opening a device can
// act on it and opening a named pipe blocks; it opens without blocking
// and looks again at what it opened, which the path may name by then.
func open(root *os.Root, rel, p, op string, dir bool) (*os.File, error) {
	if fi, err := root.Stat(rel); err == nil {
		if err := check(op, p, fi.Mode(), dir); err != nil {
			return nil, err
		}
	} // else the open reports why
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, explain(p, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = check(op, p, fi.Mode(), dir)
	}
	if err != nil {
		f.Close()
		return nil, explain(p, err)
	}
	return f, nil
}

// check refuses, for op on p, a mode that is not a regular file's (or,
// for dir, a directory's).
func check(op, p string, m fs.FileMode, dir bool) error {
	switch {
	case dir && m.IsDir(), !dir && m.IsRegular():
		return nil
	case dir:
		return fmt.Errorf("%s %s: %w (%s)", op, p, errNotDir, filekind.Of(m))
	}
	return fmt.Errorf("%s %s: %w (%s)", op, p, ErrNotRegular, filekind.Of(m))
}
