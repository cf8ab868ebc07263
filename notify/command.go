package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/proc"
)

// Limits of a Command.
const (
	// DefaultCommandTimeout bounds a command whose context has no deadline.
	DefaultCommandTimeout = time.Minute

	commandOutputMax = 4 << 10         // bytes kept of stdout and of stderr each
	commandWaitDelay = 3 * time.Second // for stdin to be written once the program is gone
	drainDelay       = time.Second     // for output held by a process that left the group
)

// Command is a program run once per notification attempt.
type Command struct {
	// Argv is the program (a path, or a name looked up in this process's
	// PATH) and its arguments. No shell is ever involved.
	Argv []string
	// Env is the program's whole environment ("NAME=value") but for
	// AGENTCTL_NOTIFICATION_ID, _TYPE and _SUMMARY, which Send adds (and
	// which win over the same names here). nil is an empty environment,
	// not this process's.
	Env []string
}

// Send runs c.Argv once with m.Body() on its stdin and, in its
// environment, AGENTCTL_NOTIFICATION_ID (m.ID), AGENTCTL_NOTIFICATION_TYPE
// (m.Type) and AGENTCTL_NOTIFICATION_SUMMARY (m.Summary()), each one line
// of printable text. On unix the program runs in a process group of its
// own: when ctx ends (or DefaultCommandTimeout passes, when ctx has no
// deadline) the whole group is killed, and what the program leaves
// running in its group is killed once it exits.
//
// It returns nil when the program exits 0; else a *SendError: permanent
// (ErrPermanent) when there is no program to run (empty Argv, not found,
// not executable) or Env holds a bad entry; worth retrying on a non-zero
// exit, a signal, or ctx ending, its text the exit status and the first
// line of stderr (or stdout), of the first 4 KiB kept of each. Errors
// name Argv[0], never the arguments.
func (c Command) Send(ctx context.Context, m *Message) error {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return &SendError{Target: "command", Permanent: true, Err: errors.New("no program to run")}
	}
	name := "command " + oneLine(c.Argv[0], 200)
	fail := func(permanent bool, err error) error {
		return &SendError{Target: name, Permanent: permanent, Err: err}
	}
	if m == nil {
		return fail(true, errors.New("no message"))
	}
	for i, kv := range c.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.ContainsRune(kv, 0) {
			return fail(true, fmt.Errorf("environment entry %d is not NAME=value", i))
		}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCommandTimeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Env = append(slices.Clip(c.Env),
		"AGENTCTL_NOTIFICATION_ID="+oneLine(m.ID, 256),
		"AGENTCTL_NOTIFICATION_TYPE="+oneLine(string(m.Type), 64),
		"AGENTCTL_NOTIFICATION_SUMMARY="+m.Summary())
	cmd.Stdin = bytes.NewReader(m.Body())
	cmd.WaitDelay = commandWaitDelay
	proc.OwnGroup(cmd)
	stdout, stderr := &capped{max: commandOutputMax}, &capped{max: commandOutputMax}
	// Pipes of our own: Wait returns when the program exits, not when
	// every process holding its output has.
	drained, closeOutput, err := proc.ReadOutput(cmd, stdout, stderr)
	if err != nil {
		return fail(false, fmt.Errorf("output pipes: %w", err))
	}
	started, err := proc.Run(cmd, func(err error) { closeOutput(err != nil) })
	if !started {
		permanent := errors.Is(err, exec.ErrNotFound) || errors.Is(err, exec.ErrDot) ||
			errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)
		return fail(permanent, fmt.Errorf("start: %w", err))
	}
	select {
	case <-drained:
	case <-time.After(drainDelay):
		closeOutput(true)
		<-drained
	}
	return commandResult(ctx, cmd, err, stdout, stderr, fail)
}

// commandResult classifies how the program ended.
func commandResult(ctx context.Context, cmd *exec.Cmd, err error, stdout, stderr *capped, fail func(bool, error) error) error {
	exited := cmd.ProcessState != nil && cmd.ProcessState.Exited()
	if exited && cmd.ProcessState.Success() && (err == nil || errors.Is(err, exec.ErrWaitDelay)) {
		return nil
	}
	line := firstLine(stderr.String())
	if line == "" {
		line = firstLine(stdout.String())
	}
	what := "failed"
	switch {
	case ctx.Err() != nil && !exited:
		what = "stopped: " + context.Cause(ctx).Error()
	case cmd.ProcessState != nil:
		what = cmd.ProcessState.String() // "exit status 3", "signal: killed"
	case err != nil:
		what = err.Error()
	}
	err = fail(false, errors.New(what))
	if e, ok := err.(*SendError); ok {
		e.answer = line
	}
	return err
}

// capped keeps the first max bytes written to it and drops the rest.
// It is safe for one writer and a reader after the writer is done.
type capped struct {
	buf bytes.Buffer
	max int
}

func (w *capped) Write(p []byte) (int, error) {
	w.buf.Write(p[:min(len(p), max(w.max-w.buf.Len(), 0))])
	return len(p), nil
}

func (w *capped) String() string { return w.buf.String() }
