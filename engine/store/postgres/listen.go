package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listener receives NOTIFY payloads on one channel, over a connection of
// its own.
type Listener struct {
	conn *pgx.Conn
}

// Listen connects to dsn and listens on channel (ChannelWork,
// ChannelEvents).
func Listen(ctx context.Context, dsn, channel string) (*Listener, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", Redact(dsn), Scrub(classify(err), dsn))
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("listen on %s: %w", channel, err)
	}
	return &Listener{conn: conn}, nil
}

// Wait returns the payload of the next notification, or "" when timeout
// passes first.
func (l *Listener) Wait(ctx context.Context, timeout time.Duration) (string, error) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	n, err := l.conn.WaitForNotification(wctx)
	if err != nil {
		if ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) {
			return "", nil
		}
		return "", err
	}
	return n.Payload, nil
}

// Close closes the connection.
func (l *Listener) Close() error { return l.conn.Close(context.Background()) }
