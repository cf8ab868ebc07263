//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"
)

// ptyrun runs a program with its standard output and error on a
// pseudo-terminal, as at a user's terminal, and prints what it wrote
// (CRLF as LF, escapes as they are) on the script's stdout:
//
//	ptyrun [-stdin FILE [-prompt TEXT]] [-exit N] PROGRAM [ARG...]
//
// It fails when the program fails; ! ptyrun expects that it does, and
// -exit N that it exits with code N. With -stdin, standard input is the
// terminal too, the program's controlling terminal, and FILE is typed
// at it one line at a time: each line once the program has written a
// prompt (its output so far ends with TEXT, default "> "), a line ^C
// as Ctrl-C and ^D as Ctrl-D (end of input); at a prompt after the last
// line, Ctrl-D. Lines left untyped when the program ends fail ptyrun.
func ptyrun(ts *testscript.TestScript, neg bool, args []string) {
	o := ptyOptions(ts, args)
	if o.exit >= 0 && neg {
		ts.Fatalf("ptyrun: -exit and ! exclude each other")
	}
	master, slave, err := openPTY()
	ts.Check(err)
	defer master.Close()
	cmd := exec.Command(o.argv[0], o.argv[1:]...)
	cmd.Path = lookScriptPath(ts, o.argv[0]) // the script's PATH, where its programs are
	cmd.Dir = ts.Getenv("WORK")
	cmd.Env = scriptEnv(ts)
	cmd.Stdout, cmd.Stderr = slave, slave
	if o.typed != nil {
		cmd.Stdin = slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}
	ts.Check(cmd.Start())
	slave.Close() // the child holds it: the master reads EOF once the child is done
	watchdog := time.AfterFunc(ptyTimeout, func() { cmd.Process.Kill() })
	defer watchdog.Stop()
	var out []byte
	left := 0
	if o.typed == nil {
		var b bytes.Buffer
		io.Copy(&b, master) // ends with EIO once the child has exited
		out = b.Bytes()
	} else {
		out, left = typeAt(master, o.typed, o.prompt)
	}
	err = cmd.Wait()
	fmt.Fprint(ts.Stdout(), strings.ReplaceAll(string(out), "\r\n", "\n"))
	code := cmd.ProcessState.ExitCode()
	switch {
	case !watchdog.Stop():
		ts.Fatalf("ptyrun %s: killed after %s", o.argv[0], ptyTimeout)
	case left > 0:
		ts.Fatalf("ptyrun %s: it ended with %d lines of input not typed", o.argv[0], left)
	case o.exit >= 0 && code != o.exit:
		ts.Fatalf("ptyrun %s: exit %d, want %d", o.argv[0], code, o.exit)
	case o.exit >= 0:
	case err != nil && !neg:
		ts.Fatalf("ptyrun %s: %v", o.argv[0], err)
	case err == nil && neg:
		ts.Fatalf("ptyrun %s: succeeded, want a failure", o.argv[0])
	}
}

// ptyTimeout is how long ptyrun lets a program run.
const ptyTimeout = 2 * time.Minute

// ptyOpts are ptyrun's options.
type ptyOpts struct {
	typed  []string // the lines to type; nil without -stdin
	prompt string
	exit   int // the exit code wanted; -1 for any but as ! says
	argv   []string
}

func ptyOptions(ts *testscript.TestScript, args []string) ptyOpts {
	o := ptyOpts{prompt: "> ", exit: -1}
	for len(args) >= 2 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-stdin":
			o.typed = []string{}
			if text := strings.TrimSuffix(ts.ReadFile(args[1]), "\n"); text != "" {
				o.typed = strings.Split(text, "\n")
			}
		case "-prompt":
			o.prompt = args[1]
		case "-exit":
			n, err := strconv.Atoi(args[1])
			if err != nil || n < 0 {
				ts.Fatalf("ptyrun: -exit %q: want an exit code", args[1])
			}
			o.exit = n
		default:
			ts.Fatalf("ptyrun: unknown option %s", args[0])
		}
		args = args[2:]
	}
	if len(args) == 0 {
		ts.Fatalf("usage: ptyrun [-stdin FILE [-prompt TEXT]] [-exit N] PROGRAM [ARG...]")
	}
	o.argv = args
	return o
}

// typeAt types lines at the terminal master, each after the next
// prompt, and returns all the program wrote and how many lines were
// left untyped when it ended.
func typeAt(master *os.File, lines []string, prompt string) ([]byte, int) {
	o := &ptyOutput{grew: make(chan struct{}, 1), done: make(chan struct{})}
	go o.read(master)
	answered, i := 0, 0
	for {
		end, ok := o.prompted(answered, prompt)
		if !ok {
			break
		}
		answered = end
		if i == len(lines) {
			master.Write([]byte{4}) // Ctrl-D: end of input
			break
		}
		switch lines[i] {
		case "^C":
			master.Write([]byte{3})
		case "^D":
			master.Write([]byte{4})
		default:
			master.Write([]byte(lines[i] + "\n"))
		}
		i++
	}
	<-o.done
	return o.bytes(), len(lines) - i
}

// ptyOutput is what a program wrote to its terminal so far.
type ptyOutput struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	grew chan struct{} // a token when buf grew
	done chan struct{} // closed when the program is done
}

func (o *ptyOutput) read(master *os.File) {
	defer close(o.done)
	b := make([]byte, 4096)
	for {
		n, err := master.Read(b)
		o.mu.Lock()
		o.buf.Write(b[:n])
		o.mu.Unlock()
		select {
		case o.grew <- struct{}{}:
		default:
		}
		if err != nil {
			return // EIO once the child has exited
		}
	}
}

// prompted waits until the output, longer than after bytes, ends with
// prompt, and returns its length; false when the program is done first.
func (o *ptyOutput) prompted(after int, prompt string) (int, bool) {
	for {
		o.mu.Lock()
		b := o.buf.Bytes()
		n, ok := len(b), len(b) > after && bytes.HasSuffix(b, []byte(prompt))
		o.mu.Unlock()
		if ok {
			return n, true
		}
		select {
		case <-o.grew:
		case <-o.done:
			return 0, false
		}
	}
}

func (o *ptyOutput) bytes() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Bytes()
}

// lookScriptPath finds a program on the script's PATH.
func lookScriptPath(ts *testscript.TestScript, name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	for _, dir := range strings.Split(ts.Getenv("PATH"), ":") {
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	ts.Fatalf("ptyrun: %s is not on the script's PATH", name)
	return ""
}

// openPTY opens a pseudo-terminal's master and slave (Linux).
func openPTY() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, err
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, s, nil
}

// scriptEnv is the script's environment, for a program it runs.
func scriptEnv(ts *testscript.TestScript) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		env = append(env, k+"="+ts.Getenv(k))
	}
	for _, k := range []string{"PATH", "HOME", "WORK", "TMPDIR", "NO_COLOR", "TERM", "AGENTCTL_DB", "XDG_STATE_HOME", "EDITOR", "VISUAL"} {
		env = append(env, k+"="+ts.Getenv(k))
	}
	return env
}

// addPTY adds ptyrun to a script's commands.
func addPTY(cmds map[string]func(ts *testscript.TestScript, neg bool, args []string)) {
	cmds["ptyrun"] = ptyrun
}
