// Package stream lets offline models (scripted, replayed) stream their
// text like a provider does, so streaming is exercised without a network.
package stream

import (
	"context"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// Text hands text to the streaming callback among opts, if any, a word
// (with the space after it) at a time.
func Text(ctx context.Context, opts []llms.CallOption, text string) error {
	var o llms.CallOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.StreamingFunc == nil || text == "" {
		return nil
	}
	for _, w := range strings.SplitAfter(text, " ") {
		if w == "" {
			continue
		}
		if err := o.StreamingFunc(ctx, []byte(w)); err != nil {
			return err
		}
	}
	return nil
}
