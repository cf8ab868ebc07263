package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listener receives NOTIFY payloads on one channel, over a connection of
// its own. It outlives that connection: once the connection breaks (the
// server restarted or failed over, the network dropped it), each Wait
// connects again, backing off with jitter between failed attempts, and
// the first Wait after it is back returns at once, as a wake-up, since
// the notifications sent meanwhile are lost: the caller looks again for
// what it may have missed.
type Listener struct {
	dsn, channel string

	mu      sync.Mutex
	conn    *pgx.Conn // nil while broken
	err     error     // why, while broken
	closed  bool
	backoff time.Duration // 0 once a connection proved itself
	retryAt time.Time
}

// Backoff bounds between attempts to connect again.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// ErrListenDown reports a Listener whose connection is broken and could
// not yet be made again; Wait goes on trying.
var ErrListenDown = errors.New("listening for notifications: no connection to the database")

// Listen connects to dsn and listens on channel (ChannelWork,
// ChannelEvents). A first connection that fails is an error; later ones
// are Wait's.
func Listen(ctx context.Context, dsn, channel string) (*Listener, error) {
	l := &Listener{dsn: dsn, channel: channel}
	conn, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	l.conn = conn
	return l, nil
}

func (l *Listener) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, l.dsn)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", Redact(l.dsn), Scrub(classify(err), l.dsn))
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.channel}.Sanitize()); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("listen on %s: %w", l.channel, Scrub(classify(err), l.dsn))
	}
	return conn, nil
}

// Wait returns the payload of the next notification, or "" when timeout
// passes first, or at once when the connection was just made again
// (notifications may have been missed). While the connection is broken
// it tries to connect again, at most once per backoff, and returns an
// error wrapping ErrListenDown when it cannot; ctx's error when ctx
// ends. Waits are not concurrent: one goroutine waits.
func (l *Listener) Wait(ctx context.Context, timeout time.Duration) (string, error) {
	l.mu.Lock()
	conn, closed := l.conn, l.closed
	l.mu.Unlock()
	if closed {
		return "", ErrListenerClosed
	}
	if conn == nil {
		return "", l.reconnect(ctx, timeout)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	n, err := conn.WaitForNotification(wctx)
	switch {
	case err == nil:
		l.proven()
		return n.Payload, nil
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(wctx.Err(), context.DeadlineExceeded) && !conn.IsClosed():
		l.proven()
		return "", nil
	}
	// The connection broke: try again at once, then back off.
	l.broke(conn, err)
	return "", l.reconnect(ctx, timeout)
}

// proven: the connection delivered a notification or outlived a whole
// wait, so a later break is retried at once.
func (l *Listener) proven() {
	l.mu.Lock()
	l.backoff = 0
	l.mu.Unlock()
}

// broke forgets a broken connection. One that had proved itself is
// tried again at once; one that broke before it did (a server that
// crashes in a loop, a proxy that cuts every connection) waits twice the
// last backoff.
func (l *Listener) broke(conn *pgx.Conn, err error) {
	conn.Close(context.Background())
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != conn {
		return
	}
	l.conn, l.err, l.retryAt = nil, Scrub(classify(err), l.dsn), time.Time{}
	if l.backoff > 0 {
		l.backOff()
	}
}

// backOff doubles the backoff and sets the next attempt's time: jittered
// over the upper half of the backoff, so that processes that lost the
// server together do not all knock at once.
func (l *Listener) backOff() {
	l.backoff = min(max(2*l.backoff, minBackoff), maxBackoff)
	l.retryAt = time.Now().Add(l.backoff/2 + rand.N(l.backoff/2+1))
}

// reconnect connects again if the backoff allows, else waits for it (at
// most timeout). It returns nil once connected.
func (l *Listener) reconnect(ctx context.Context, timeout time.Duration) error {
	l.mu.Lock()
	wait := time.Until(l.retryAt)
	cause := l.err
	l.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(min(wait, timeout))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if wait > timeout {
			return fmt.Errorf("%w: %w", ErrListenDown, cause)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, max(timeout, time.Second))
	defer cancel()
	conn, err := l.connect(cctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		if conn != nil {
			conn.Close(context.Background())
		}
		return ErrListenerClosed
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		l.err = err
		l.backOff()
		return fmt.Errorf("%w: %w", ErrListenDown, err)
	}
	// On probation until it proves itself (see proven).
	l.conn, l.err, l.backoff, l.retryAt = conn, nil, max(l.backoff, minBackoff), time.Time{}
	return nil
}

// ErrListenerClosed is Wait's error once the Listener is closed.
var ErrListenerClosed = errors.New("listening for notifications: the listener is closed")

// Close closes the connection; Waits after it fail with
// ErrListenerClosed. It must not be called while a Wait is under way:
// end the waiting loop first.
func (l *Listener) Close() error {
	l.mu.Lock()
	conn := l.conn
	l.conn, l.err, l.closed = nil, ErrListenerClosed, true
	l.mu.Unlock()
	if conn == nil {
		return nil
	}
	return conn.Close(context.Background())
}
