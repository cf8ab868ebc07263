// Package file reads, writes and lists files as a tool, inside one root
// directory: every path is resolved inside it (no "..", no absolute
// paths, no symbolic link out of it), and writes are atomic.
package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/spec/tmpl"
	"github.com/agentctl/agentctl/toolkits"
	"github.com/agentctl/agentctl/toolkits/redact"
)

// MaxRead bounds the bytes a read returns.
const MaxRead = 1 << 20

// Action carries out one declared file operation.
type Action struct{ spec *spec.File }

// New returns the Action for a file declaration.
func New(f *spec.File) *Action { return &Action{spec: f} }

// ErrOutside reports a path that would leave the root.
var ErrOutside = errors.New("path leaves the tool's root")

// Do implements toolkits.Action.
func (a *Action) Do(_ context.Context, c toolkits.Call) (toolkits.Result, error) {
	env := tmpl.Env(c.Vars())
	p, err := a.spec.Path.Render(env)
	if err != nil {
		return toolkits.Result{}, fmt.Errorf("path: %w", err)
	}
	rel, err := clean(p)
	if err != nil {
		return toolkits.Result{}, err
	}
	root, err := os.OpenRoot(a.spec.Root)
	if err != nil {
		return toolkits.Result{}, fmt.Errorf("root: %w", err)
	}
	defer root.Close()
	switch a.spec.Op {
	case "read":
		f, err := root.Open(rel)
		if err != nil {
			return toolkits.Result{}, explain(p, err)
		}
		defer f.Close()
		// The call's secrets are cut before the content is truncated,
		// so one straddling the cut leaves nothing behind.
		secrets := redact.New(slices.Collect(maps.Keys(c.Env)), c.Env)
		data, err := io.ReadAll(io.LimitReader(f, int64(MaxRead+secrets.Slack()+1)))
		if err != nil {
			return toolkits.Result{}, explain(p, err)
		}
		content, truncated := secrets.Prefix(string(data), MaxRead)
		if truncated {
			content += fmt.Sprintf("\n[... truncated at %d bytes]", MaxRead)
		}
		return toolkits.Result{Content: content}, nil
	case "write":
		content, err := a.spec.Content.Render(env)
		if err != nil {
			return toolkits.Result{}, fmt.Errorf("content: %w", err)
		}
		if err := write(root, rel, content); err != nil {
			return toolkits.Result{}, explain(p, err)
		}
		return toolkits.Result{Content: fmt.Sprintf("wrote %d bytes to %s", len(content), rel)}, nil
	case "list":
		f, err := root.Open(rel)
		if err != nil {
			return toolkits.Result{}, explain(p, err)
		}
		defer f.Close()
		ents, err := f.ReadDir(-1)
		if err != nil {
			return toolkits.Result{}, explain(p, err)
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
		return toolkits.Result{Content: b.String()}, nil
	}
	return toolkits.Result{}, fmt.Errorf("unknown op %q", a.spec.Op)
}

// clean turns a model's path into one relative to the root, refusing
// absolute paths and any "..".
func clean(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if path.IsAbs(p) || strings.HasPrefix(p, `\`) {
		return "", fmt.Errorf("%w: %q is absolute; paths are relative to the root", ErrOutside, p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: %q climbs out with \"..\"", ErrOutside, p)
		}
	}
	return path.Clean(p), nil
}

// write replaces a file atomically: a temporary file beside it, renamed.
func write(root *os.Root, rel, content string) error {
	if dir := path.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp := fmt.Sprintf("%s.agentctl-%d.tmp", rel, os.Getpid())
	if err := root.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	if err := root.Rename(tmp, rel); err != nil {
		root.Remove(tmp)
		return err
	}
	return nil
}

// explain words an os.Root error for the model.
func explain(p string, err error) error {
	msg := err.Error()
	if strings.Contains(msg, "path escapes from parent") {
		return fmt.Errorf("%w: %q leads outside it (a symbolic link?)", ErrOutside, p)
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %s: %w", strings.TrimSuffix(pe.Op, "at"), p, pe.Err)
	}
	return err
}

// Kit builds the tool of a file declaration: the environment variables
// its path and content read are its secrets.
func Kit(t *spec.Tool) (toolkits.Kit, error) {
	f := t.File
	return &toolkits.Declared{Spec: t, Act: New(f), Summary: "file " + f.Op + " in " + f.Root,
		Vars: append(f.Path.EnvNames(), f.Content.EnvNames()...)}, nil
}
