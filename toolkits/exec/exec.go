// Package exec runs a command as a tool. Each argv element is rendered on
// its own from the call's arguments and the command is started directly,
// never through a shell, so an argument can never become another argument
// or shell syntax.
package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	osexec "os/exec"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/proc"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/spec/tmpl"
	"github.com/agentctl/agentctl/toolkits"
	"github.com/agentctl/agentctl/toolkits/redact"
)

// Defaults for what a spec leaves out.
const (
	DefaultTimeout   = 30 * time.Second
	DefaultMaxOutput = 64 << 10
)

// Action runs one declared command.
type Action struct {
	argv      []*tmpl.String
	dir       string
	env       map[string]*tmpl.String
	inherit   []string
	shell     bool
	timeout   time.Duration
	maxOutput int
	// unsafe, when set, is why the command is never run: a placeholder
	// in an argument run as code (a run's spec from before validate
	// refused it) would run a value as code.
	unsafe string
	// options are the arguments that begin with a value where a program
	// parses options, and that the tool's schema does not keep from
	// beginning with "-": a call whose value there does is refused.
	options []spec.OptionArg
}

// New returns the Action for an exec declaration.
func New(e *spec.Exec) *Action { return newAction(e, nil) }

// newAction returns the Action for the exec declaration of tool t (nil:
// a command whose inputs have no schema).
func newAction(e *spec.Exec, t *spec.Tool) *Action {
	a := &Action{argv: e.Command, dir: e.Dir, env: e.Env, inherit: e.InheritEnv, shell: e.Shell, timeout: e.Timeout, maxOutput: int(e.MaxOutput)}
	src := make([]string, len(e.Command))
	for i, c := range e.Command {
		src[i] = c.Source()
	}
	if code := spec.CodeArgs(src); len(code) > 0 {
		a.unsafe = fmt.Sprintf("refused: command[%d] puts a placeholder in an argument run as code (%s), where a value would run as code; the spec must pass it through env (agentctl validate says how)", code[0].Index, code[0].What)
	}
	if !e.Shell {
		a.options = spec.OptionChecks(src, t)
	}
	if a.timeout == 0 {
		a.timeout = DefaultTimeout
	}
	if a.maxOutput == 0 {
		a.maxOutput = DefaultMaxOutput
	}
	return a
}

// optionValue returns why argv, rendered, is refused: a value from the
// call begins an argument where a program parses options with a
// character that makes it an option (--output=/tmp/x). The value itself
// is not repeated.
func (a *Action) optionValue(argv []string) error {
	for _, o := range a.options {
		v := argv[o.Index]
		switch {
		case o.Dashes:
			return fmt.Errorf("refused: command[%d] lets the value name an option of %s; the spec must write the option out or constrain the input with an enum (agentctl validate says how)", o.Index, o.Program)
		case v != "" && strings.ContainsRune(o.Bad, rune(v[0])):
			return fmt.Errorf("refused: command[%d] would begin with %q, and %s would read the value as an option; the spec must put \"--\" before it or constrain the input (agentctl validate says how)", o.Index, v[:1], o.Program)
		}
	}
	return nil
}

// Output is the result of a command: a JSON object in views, events and
// the database, and as compact JSON to the model. Error is set only when
// the command timed out (ExitCode -1).
type Output struct {
	ExitCode int    `json:"exitCode"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	Error    string `json:"error,omitempty"`
}

// Do implements toolkits.Action. A non-zero exit or a timeout is a failed
// result; a command that cannot start is an error, and so is one stopped
// because ctx ended (the call was interrupted, not failed). The values of
// the call's environment (its tool's secrets) are cut from stdout and
// stderr before they are truncated to maxOutput, so a secret straddling
// the cut leaves nothing behind.
func (a *Action) Do(ctx context.Context, c toolkits.Call) (toolkits.Result, error) {
	if a.unsafe != "" {
		return toolkits.Result{}, errors.New(a.unsafe)
	}
	argv, vars, err := a.render(c)
	if err != nil {
		return toolkits.Result{}, err
	}
	if err := a.optionValue(argv); err != nil {
		return toolkits.Result{}, err
	}
	out, err := a.run(ctx, argv, vars, redact.New(slices.Collect(maps.Keys(c.Env)), c.Env))
	if err != nil {
		return toolkits.Result{}, err
	}
	return toolkits.ObjectResult(out, out.ExitCode != 0)
}

// Preview implements toolkits.Previewer: the argv and the declared
// environment, rendered as Do renders them.
func (a *Action) Preview(c toolkits.Call) (toolkits.Preview, error) {
	argv, _, err := a.render(c)
	if err != nil {
		return toolkits.Preview{}, err
	}
	p := toolkits.Preview{Command: argv}
	env := tmpl.Env(c.Vars())
	for name, t := range a.env {
		v, err := t.Render(env)
		if err != nil {
			return toolkits.Preview{}, fmt.Errorf("env %s: %w", name, err)
		}
		if p.Env == nil {
			p.Env = map[string]string{}
		}
		p.Env[name] = v
	}
	return p, nil
}

// render returns the command's argv and environment for a call.
func (a *Action) render(c toolkits.Call) (argv, vars []string, err error) {
	env := tmpl.Env(c.Vars())
	argv = make([]string, len(a.argv))
	for i, t := range a.argv {
		if argv[i], err = t.Render(env); err != nil {
			return nil, nil, fmt.Errorf("command[%d]: %w", i, err)
		}
	}
	if a.shell {
		// A fixed script: values reach it only as environment variables.
		argv = []string{"/bin/sh", "-c", argv[0], "agentctl-tool"}
	}
	// A minimal environment: a model key or database URL in agentctl's
	// environment never reaches a command that could echo it.
	vars = append(toolkits.ChildEnv(a.inherit), proc.CallEnv(c.RunID, c.CallID)...)
	for _, name := range slices.Sorted(maps.Keys(a.env)) {
		v, err := a.env[name].Render(env)
		if err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", name, err)
		}
		vars = append(vars, name+"="+v)
	}
	return argv, vars, nil
}

// drainDelay bounds how long output is read after the command's process
// group is gone: a descendant that left the group may hold the pipes.
const drainDelay = time.Second

// run runs argv in a process group of its own. On timeout or when ctx
// ends the whole group is killed; when the command exits, its exit status
// is the result and what it left running in its group is killed. On
// Linux the command also dies with this process (proc.Run).
func (a *Action) run(ctx context.Context, argv, vars []string, secrets *redact.Redactor) (Output, error) {
	tctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	cmd := osexec.CommandContext(tctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = a.dir, vars
	proc.OwnGroup(cmd)
	// Kept past maxOutput: enough to cut a secret straddling the cut.
	keep := a.maxOutput + secrets.Slack()
	stdout, stderr := &capped{max: keep}, &capped{max: keep}
	// Pipes of our own, read here: Wait returns when the command exits,
	// not when every descendant holding its output has.
	drained, closeOutput, err := proc.ReadOutput(cmd, stdout, stderr)
	if err != nil {
		return Output{}, fmt.Errorf("run %s: %w", argv[0], err)
	}
	started, err := proc.Run(cmd, func(err error) { closeOutput(err != nil) })
	if !started {
		return Output{}, fmt.Errorf("run %s: %w", argv[0], err)
	}
	select {
	case <-drained:
	case <-time.After(drainDelay):
		closeOutput(true)
		<-drained
	}
	out := Output{Stdout: stdout.text(secrets, a.maxOutput), Stderr: stderr.text(secrets, a.maxOutput)}
	var exitErr *osexec.ExitError
	switch {
	case cmd.ProcessState != nil && cmd.ProcessState.Success():
	case ctx.Err() != nil:
		return Output{}, fmt.Errorf("run %s: stopped: %w", argv[0], context.Cause(ctx))
	case tctx.Err() == context.DeadlineExceeded:
		out.ExitCode = -1
		out.Error = fmt.Sprintf("timed out after %s", a.timeout)
	case errors.As(err, &exitErr):
		out.ExitCode = exitErr.ExitCode()
	case err != nil:
		return Output{}, fmt.Errorf("run %s: %w", argv[0], err)
	}
	return out, nil
}

// capped keeps the first max bytes written and counts them all.
type capped struct {
	buf   bytes.Buffer
	max   int
	total int
}

func (w *capped) Write(p []byte) (int, error) {
	keep := min(len(p), w.max-w.buf.Len())
	w.buf.Write(p[:keep])
	w.total += len(p)
	return len(p), nil
}

// text returns what was written with the secrets cut, truncated to n
// bytes of output: a secret that starts before the cut is cut whole.
func (w *capped) text(secrets *redact.Redactor, n int) string {
	s, _ := secrets.Prefix(w.buf.String(), n)
	if w.total <= n {
		return s
	}
	return fmt.Sprintf("%s\n[... %d bytes truncated]", s, w.total-n)
}

// Kit builds the tool of an exec declaration: the environment variables
// its command and env read, and those it inherits, are its secrets.
func Kit(t *spec.Tool) (toolkits.Kit, error) {
	var vars []string
	argv := make([]string, len(t.Exec.Command))
	for i, c := range t.Exec.Command {
		vars = append(vars, c.EnvNames()...)
		argv[i] = c.Source()
	}
	for _, v := range t.Exec.Env {
		vars = append(vars, v.EnvNames()...)
	}
	vars = append(vars, t.Exec.InheritEnv...)
	return &toolkits.Declared{Spec: t, Act: newAction(t.Exec, t), Summary: "exec " + strings.Join(argv, " "), Vars: vars}, nil
}
