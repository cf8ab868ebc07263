// Package proc runs programs as agentctl does wherever it starts one (an
// exec tool, a notification's command): in a process group of their own,
// killed whole when their context ends, with their output read through
// pipes that a process left behind cannot hold open. On Linux a program
// dies with the agentctl that started it; KillCall finds and kills what
// a dead agentctl's tool call left running.
package proc

import (
	"io"
	"os"
	"os/exec"
	"sync"
)

// ReadOutput gives cmd a stdout and a stderr pipe whose read ends are
// copied into stdout and stderr; drained is closed when both reach their
// end. closeOutput(false), after Start, closes the write ends this process
// holds; closeOutput(true) also closes the read ends, ending the copies.
func ReadOutput(cmd *exec.Cmd, stdout, stderr io.Writer) (drained <-chan struct{}, closeOutput func(all bool), err error) {
	var files []*os.File // read ends, then write ends
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, nil, err
		}
		files = append(files, r, w)
	}
	cmd.Stdout, cmd.Stderr = files[1], files[3]
	var wg sync.WaitGroup
	for i, dst := range []io.Writer{stdout, stderr} {
		wg.Go(func() { _, _ = io.Copy(dst, files[2*i]) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var once, onceAll sync.Once
	return done, func(all bool) {
		once.Do(func() { files[1].Close(); files[3].Close() })
		if all {
			onceAll.Do(func() { files[0].Close(); files[2].Close() })
		}
	}, nil
}
