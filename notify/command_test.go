//go:build unix

package notify

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/toolkits/redact"
)

// script writes an executable shell script to a temporary directory and
// returns its path.
func script(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+text), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCommandSend(t *testing.T) {
	t.Setenv("NOTIFY_TEST_LEAK", "leaked")
	dir := t.TempDir()
	prog := script(t, `cat > "$1/body"
printf '%s\n' "$AGENTCTL_NOTIFICATION_ID" "$AGENTCTL_NOTIFICATION_TYPE" "$AGENTCTL_NOTIFICATION_SUMMARY" "$EXTRA" "$NOTIFY_TEST_LEAK" > "$1/env"
`)
	m := sampleApproval()
	m.ID = "ntf_1\n2"
	c := Command{Argv: []string{prog, dir}, Env: []string{"PATH=" + os.Getenv("PATH"), "EXTRA=x y", "AGENTCTL_NOTIFICATION_ID=overridden"}}
	if err := c.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	body, _ := os.ReadFile(filepath.Join(dir, "body"))
	if !bytes.Equal(body, m.Body()) {
		t.Errorf("stdin = %s, want the body", body)
	}
	env, _ := os.ReadFile(filepath.Join(dir, "env"))
	want := "ntf_1 2\napproval\napproval needed: restart_service in run 01JRUN (oncall/ops)\nx y\n\n"
	if string(env) != want {
		t.Errorf("environment:\n%q, want\n%q", env, want)
	}
}

func TestCommandFailures(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "plain")
	os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644)
	tests := []struct {
		name      string
		argv      []string
		env       []string
		permanent bool
		want      string
	}{
		{name: "exit 3", argv: []string{script(t, "echo '  boom: <bad>' >&2\necho second >&2\nexit 3\n")},
			want: "exit status 3: boom: <bad>"},
		{name: "stdout when no stderr", argv: []string{script(t, "echo 'only out'\nexit 1\n")}, want: "exit status 1: only out"},
		{name: "huge stderr", argv: []string{script(t, "i=0\nwhile [ $i -lt 2000 ]; do printf 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' >&2; i=$((i+1)); done\nexit 1\n")},
			want: "exit status 1: xxx"},
		{name: "signal", argv: []string{script(t, "kill -9 $$\n")}, want: "signal: killed"},
		{name: "arguments stay out", argv: []string{"/bin/sh", "-c", "exit 1", "SECRETARG"}, want: "command /bin/sh: exit status 1"},
		{name: "missing path", argv: []string{"/nonexistent/agentctl-notify"}, permanent: true, want: "start: "},
		{name: "missing name", argv: []string{"agentctl-no-such-program"}, permanent: true, want: "executable file not found"},
		{name: "not executable", argv: []string{notExec}, permanent: true, want: "permission denied"},
		{name: "empty argv", permanent: true, want: "command: no program to run"},
		{name: "bad env", argv: []string{"/bin/true"}, env: []string{"NOEQUALS"}, permanent: true, want: "environment entry 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Command{Argv: tt.argv, Env: tt.env}.Send(context.Background(), sampleApproval())
			var se *SendError
			if !errors.As(err, &se) || se.Permanent != tt.permanent || errors.Is(err, ErrPermanent) != tt.permanent {
				t.Fatalf("err = %#v (%v)", err, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) || strings.Contains(msg, "second") || strings.Contains(msg, "SECRETARG") || len(msg) > 500 {
				t.Errorf("error = %q, want %q", msg, tt.want)
			}
		})
	}
}

// TestCommandExcerptRedacted: a failed command's output shows as at most
// ExcerptMax bytes, a secret straddling the excerpt's end cut whole.
func TestCommandExcerptRedacted(t *testing.T) {
	const secret = "s3cr3t-value-123456"
	argv := []string{"/bin/sh", "-c", `printf '%s' "$0" >&2; exit 2`, strings.Repeat("y", 190) + secret + " more"}
	err := Command{Argv: argv}.Send(context.Background(), sampleApproval())
	var se *SendError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v", err)
	}
	got := se.Redacted(redact.New([]string{"TOK"}, map[string]string{"TOK": secret}))
	if want := "command /bin/sh: exit status 2: " + strings.Repeat("y", 190) + "[env.TO…"; got != want {
		t.Errorf("Redacted =\n%q, want\n%q", got, want)
	}
}

// groupWitness returns a FIFO path for a script to hold open (as fd 3)
// in itself and in the processes it starts, and a function that returns
// once every holder has closed it: every one has exited. It fails the
// test when that takes more than 10 seconds. Before it returns, the
// script must have written a byte to it.
func groupWitness(t *testing.T) (path string, started <-chan struct{}, gone func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A writer of our own until the script has written: before any
	// writer, a read would see the end at once.
	w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	r.SetReadDeadline(time.Now().Add(30 * time.Second))
	ch := make(chan struct{})
	go func() {
		if _, err := r.Read(make([]byte, 1)); err == nil {
			close(ch)
		}
	}()
	return path, ch, func() {
		t.Helper()
		w.Close()
		r.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadAll(r); err != nil {
			t.Fatalf("a process of the command's group is still running: %v", err)
		}
	}
}

func TestCommandCancelKillsGroup(t *testing.T) {
	fifo, started, gone := groupWitness(t)
	prog := script(t, `exec 3>"$1"
sleep 100 &
printf x >&3
wait
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Command{Argv: []string{prog, fifo}, Env: []string{"PATH=" + os.Getenv("PATH")}}.Send(ctx, sampleApproval())
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("Send returned before the script started its child: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		var se *SendError
		if !errors.As(err, &se) || se.Permanent || !strings.Contains(err.Error(), "stopped: context canceled") {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Send did not return after its context ended")
	}
	gone()
}

func TestCommandLeftoversKilled(t *testing.T) {
	fifo, _, gone := groupWitness(t)
	prog := script(t, `exec 3>"$1"
sleep 100 &
printf x >&3
exit 0
`)
	if err := (Command{Argv: []string{prog, fifo}, Env: []string{"PATH=" + os.Getenv("PATH")}}).Send(context.Background(), sampleApproval()); err != nil {
		t.Fatal(err)
	}
	gone()
}

func TestCommandDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := Command{Argv: []string{script(t, "exec sleep 100\n")}, Env: []string{"PATH=" + os.Getenv("PATH")}}.Send(ctx, sampleApproval())
	if err == nil || errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "stopped: context deadline exceeded") {
		t.Fatalf("err = %v", err)
	}
}
