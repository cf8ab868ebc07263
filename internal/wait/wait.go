// Package wait waits for a time or a context, whichever comes first.
package wait

import (
	"context"
	"time"
)

// For waits d, or until ctx ends: it returns nil after d, ctx's error if
// ctx ended first. A d of zero or less returns ctx's error at once.
func For(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
