//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"
)

// ptyrun runs a program with its standard output and error on a
// pseudo-terminal, as at a user's terminal, and prints what it wrote
// (CRLF as LF, escapes as they are) on the script's stdout:
//
//	ptyrun PROGRAM [ARG...]
//
// It fails when the program fails; ! ptyrun expects that it does.
func ptyrun(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: ptyrun PROGRAM [ARG...]")
	}
	master, slave, err := openPTY()
	ts.Check(err)
	defer master.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Path = lookScriptPath(ts, args[0]) // the script's PATH, where its programs are
	cmd.Dir = ts.Getenv("WORK")
	cmd.Env = scriptEnv(ts)
	cmd.Stdout, cmd.Stderr = slave, slave
	ts.Check(cmd.Start())
	slave.Close() // the child holds it: the master reads EOF once the child is done
	var out bytes.Buffer
	io.Copy(&out, master) // ends with EIO once the child has exited
	err = cmd.Wait()
	fmt.Fprint(ts.Stdout(), strings.ReplaceAll(out.String(), "\r\n", "\n"))
	switch {
	case err != nil && !neg:
		ts.Fatalf("ptyrun %s: %v", args[0], err)
	case err == nil && neg:
		ts.Fatalf("ptyrun %s: succeeded, want a failure", args[0])
	}
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
	for _, k := range []string{"PATH", "HOME", "WORK", "TMPDIR", "NO_COLOR", "TERM", "AGENTCTL_DB", "XDG_STATE_HOME"} {
		env = append(env, k+"="+ts.Getenv(k))
	}
	return env
}

// addPTY adds ptyrun to a script's commands.
func addPTY(cmds map[string]func(ts *testscript.TestScript, neg bool, args []string)) {
	cmds["ptyrun"] = ptyrun
}
