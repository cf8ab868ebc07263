// Package health keeps the state of a process's long-lived loops that
// wait on the database (a worker's wait for work, a server's event
// streams and outbox): each wait says whether it worked, and the server
// reports the loops that fail (/readyz, /metrics).
package health

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// Loops is the state of a process's loops. The zero value is ready to
// use, and its methods are safe for concurrent use.
type Loops struct {
	mu   sync.Mutex
	up   map[string]bool
	errs map[string]error
}

// Problem is a loop that fails, and why.
type Problem struct {
	Loop string
	Err  error
}

// Wait is a backend.Wakeup: it blocks until a notification may have
// arrived or d passes.
type Wait = func(ctx context.Context, d time.Duration) error

// Watch registers the loop name, up, and returns wait reporting to it:
// a wait that fails marks the loop down with its error, one that works
// marks it up again. A wait ended by its ctx changes nothing.
func (l *Loops) Watch(name string, wait Wait) Wait {
	l.set(name, nil)
	return func(ctx context.Context, d time.Duration) error {
		err := wait(ctx, d)
		if ctx.Err() == nil {
			l.set(name, err)
		}
		return err
	}
}

func (l *Loops) set(name string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.up == nil {
		l.up, l.errs = map[string]bool{}, map[string]error{}
	}
	l.up[name] = err == nil
	if err != nil {
		l.errs[name] = err
	} else {
		delete(l.errs, name)
	}
}

// Problems are the loops that fail now, by name.
func (l *Loops) Problems() []Problem {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Problem
	for name, err := range l.errs {
		out = append(out, Problem{Loop: name, Err: err})
	}
	slices.SortFunc(out, func(a, b Problem) int { return cmp.Compare(a.Loop, b.Loop) })
	return out
}

// State is every loop's name and whether it works, by name.
func (l *Loops) State() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]bool, len(l.up))
	for name, up := range l.up {
		out[name] = up
	}
	return out
}
