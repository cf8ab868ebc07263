package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
)

// defaultGrace is how long, after SIGTERM or Ctrl-C, the tool in flight
// may go on before it is killed (--grace).
const defaultGrace = 30 * time.Second

// watchSignals turns SIGTERM and SIGINT into a graceful stop, and
// SIGQUIT into one without grace (agentctl test's -timeout sends it):
// the tool in flight is killed at once and its call recorded
// interrupted. The first
// closes a.stop: the engines finish the step in flight (a tool, a model
// turn), checkpoint and release their runs, and claim nothing more. The
// command's context ends at once when no engine is advancing a run, else
// when the grace period is over or at a second signal: that kills a tool
// still running, and its call is recorded interrupted. The returned
// function stops watching.
func (a *app) watchSignals(cancel context.CancelCauseFunc) (unwatch func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt, syscall.SIGQUIT)
	done := make(chan struct{})
	go func() {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-done:
			return
		}
		close(a.stop)
		busy, grace := a.busy()
		if !busy || sig == syscall.SIGQUIT { // quit: now, without grace
			cancel(fmt.Errorf("stopped by %s", sig))
			return
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
			cancel(fmt.Errorf("stopped by %s: the grace period (%s) ran out", sig, grace))
		case again := <-sigs:
			cancel(fmt.Errorf("stopped by a second %s", again))
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// busy reports whether one of the command's engines is advancing a run,
// and the grace period it may take. grace is read only then: set by the
// flags before the engine was added under a.mu, it is seen here.
func (a *app) busy() (bool, time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, e := range a.engines {
		if e.Busy() {
			return true, a.grace
		}
	}
	return false, 0
}

// addEngine keeps an engine the command advances runs with: it is asked
// to stop on a signal and closed at the end.
func (a *app) addEngine(e *engine.Engine) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.engines = append(a.engines, e)
}

// checkGrace refuses a negative --grace.
func (a *app) checkGrace(*cobra.Command, []string) error {
	if a.grace < 0 {
		return usageErr(fmt.Errorf("--grace %s: want 0 or more", a.grace))
	}
	return nil
}
