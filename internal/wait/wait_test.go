package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFor(t *testing.T) {
	if err := For(context.Background(), time.Millisecond); err != nil {
		t.Errorf("after d: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := For(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("ended context: %v", err)
	}
	if err := For(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("no wait, ended context: %v", err)
	}
}
