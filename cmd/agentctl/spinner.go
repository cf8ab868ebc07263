package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// spinnerFrames are the spinner's frames.
const spinnerFrames = `|/-\`

// spinner returns engine.Config.Busy for a command at a terminal: while a
// tool call (or, unless the model's text streams on stdout, a model
// call) runs, stderr shows what runs and for how long, redrawn every
// 100ms and cleared as it ends. Nil (nothing shown) when stderr is not
// a terminal: pipes and logs stay clean.
func (a *app) spinner(streaming bool) func(string) func() {
	w := a.stderr
	if !isTerminal(w) {
		return nil
	}
	return func(what string) func() {
		if streaming && strings.HasPrefix(what, "model ") {
			return func() {}
		}
		return spin(w, what, time.Now)
	}
}

// spin draws what on w at once, then every 100ms, until the function it
// returns is called: it clears the line and returns once the drawing
// has stopped.
func spin(w io.Writer, what string, now func() time.Time) func() {
	start := now()
	draw := func(i int) {
		fmt.Fprintf(w, "\r\x1b[K%c %s %.1fs", spinnerFrames[i%len(spinnerFrames)], what, now().Sub(start).Seconds())
	}
	draw(0)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-t.C:
				draw(i)
			}
		}
	}()
	return func() {
		close(stop)
		<-stopped
		fmt.Fprint(w, "\r\x1b[K")
	}
}
