// Package file reads, writes and lists files as a tool, inside one root
// directory: every path is resolved inside it (no "..", no absolute
// paths, no symbolic link out of it), and writes are atomic. Only
// regular files are read or written: a named pipe, a device or a socket
// is refused.
package file

import (
	"context"
	"errors"
	"fmt"
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

// Do implements toolkits.Action. Only regular files are read or
// replaced, and only directories listed: a named pipe, a device or a
// socket is refused, naming the path. A read or a write stops when ctx
// ends.
func (a *Action) Do(ctx context.Context, c toolkits.Call) (toolkits.Result, error) {
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
		// The call's secrets are cut before the content is truncated,
		// so one straddling the cut leaves nothing behind.
		secrets := redact.New(slices.Collect(maps.Keys(c.Env)), c.Env)
		data, err := read(ctx, root, rel, p, int64(MaxRead+secrets.Slack()+1))
		if err != nil {
			return toolkits.Result{}, err
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
		if err := write(ctx, root, rel, p, content); err != nil {
			return toolkits.Result{}, err
		}
		return toolkits.Result{Content: fmt.Sprintf("wrote %d bytes to %s", len(content), rel)}, nil
	case "list":
		names, err := list(ctx, root, rel, p)
		if err != nil {
			return toolkits.Result{}, err
		}
		return toolkits.Result{Content: names}, nil
	}
	return toolkits.Result{}, fmt.Errorf("unknown op %q", a.spec.Op)
}

// Preview implements toolkits.Previewer: the operation, the root, the
// path as Do cleans it and, for a write, the content.
func (a *Action) Preview(c toolkits.Call) (toolkits.Preview, error) {
	env := tmpl.Env(c.Vars())
	p, err := a.spec.Path.Render(env)
	if err != nil {
		return toolkits.Preview{}, fmt.Errorf("path: %w", err)
	}
	rel, err := clean(p)
	if err != nil {
		return toolkits.Preview{}, err
	}
	out := toolkits.Preview{Op: a.spec.Op, Root: a.spec.Root, Path: rel}
	if a.spec.Op == "write" {
		if out.Content, err = a.spec.Content.Render(env); err != nil {
			return toolkits.Preview{}, fmt.Errorf("content: %w", err)
		}
	}
	return out, nil
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
