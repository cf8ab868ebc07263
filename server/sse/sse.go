// Package sse streams a store's events as Server-Sent Events (GET
// /v1/runs/{id}/events and GET /v1/events of agentctl serve).
//
// Each event is written as
//
//	id: <cursor>
//	event: <type>
//	data: <the event as one JSON object>
//
// followed by a blank line. The id is the event's place in commit order
// (store.Event.Cursor): a client that reconnects with it in the
// Last-Event-ID header (or, when it cannot set headers, ?after=) gets
// every event committed after it, none missed and none repeated.
//
// The stream is pulled from the store a batch at a time, so a slow
// client holds one batch in memory, never a growing queue; a client that
// stops reading is cut off after Options.WriteTimeout.
package sse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine/store"
)

// Source is where a stream's events come from.
type Source struct {
	// Feed returns the events committed after cursor after ("": from
	// the first), in commit order, each with its Cursor; a cursor it
	// did not make is store.ErrBadCursor.
	Feed func(ctx context.Context, after string) ([]*store.Event, error)
	// Wait blocks until new events may exist (a notification, a poll
	// tick) or ctx ends.
	Wait func(ctx context.Context) error
}

// Options tune a stream. Zero fields take defaults.
type Options struct {
	// KeepAlive is how long a stream stays silent before a comment is
	// sent, so that proxies and clients keep an idle stream open.
	// Default 15s.
	KeepAlive time.Duration
	// WriteTimeout is how long one write to the client may take; a
	// client that stops reading is cut off after it. Default 30s.
	WriteTimeout time.Duration
	// Rest, when set, is asked whenever the stream has caught up with
	// the feed whether to end it: lastID is the ID of the last event
	// sent on this connection (0: none yet). RunRest ends it when a run
	// has come to rest.
	Rest func(ctx context.Context, lastID int64) (bool, error)
	// Stop, once closed, ends the stream (the server is shutting down).
	Stop <-chan struct{}
	// Error writes an error response before the stream starts; default
	// WriteError.
	Error func(w http.ResponseWriter, r *http.Request, err error)
	// Start, when set, says where a stream with no Last-Event-ID and no
	// ?after= starts: the cursor to read after. Unset, it starts at the
	// first event.
	Start func(r *http.Request) (string, error)
}

// Default timings.
const (
	DefaultKeepAlive    = 15 * time.Second
	DefaultWriteTimeout = 30 * time.Second
)

// Serve streams src's events to w until the client goes, the server
// stops (Options.Stop), Options.Rest says so, or the source fails. It
// resumes after the Last-Event-ID header, or ?after= without one; with
// neither, it starts where Options.Start says. A bad cursor, or a source that fails before anything is written,
// is an error response (Options.Error) instead of a stream.
func Serve(w http.ResponseWriter, r *http.Request, src Source, opts Options) {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if opts.Stop != nil {
		go func() {
			select {
			case <-opts.Stop:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = r.URL.Query().Get("after")
	}
	var err error
	if after == "" && opts.Start != nil {
		if after, err = opts.Start(r.WithContext(ctx)); err != nil {
			opts.Error(w, r, err)
			return
		}
	}
	evs, err := src.Feed(ctx, after)
	if err != nil {
		opts.Error(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	s := &stream{w: w, rc: http.NewResponseController(w), opts: opts}
	s.deadline()
	w.WriteHeader(http.StatusOK)
	if s.rc.Flush() != nil {
		return
	}
	s.follow(ctx, src, evs, after)
}

// stream is one client's stream.
type stream struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	opts Options
}

// follow writes evs, then the events that come after them, until the
// stream ends.
func (s *stream) follow(ctx context.Context, src Source, evs []*store.Event, after string) {
	idle := time.Now()
	var lastID int64
	rested := false // Rest said so before the last Feed
	for {
		var err error
		switch {
		case len(evs) > 0:
			if s.write(evs) != nil {
				return
			}
			after, idle, rested = evs[len(evs)-1].Cursor, time.Now(), false
			for _, ev := range evs {
				lastID = max(lastID, ev.ID)
			}
		case rested:
			return // at rest before a Feed that brought nothing new: nothing more comes
		case s.opts.Rest != nil:
			// Asked before the next Feed: what was committed before the
			// run came to rest is in it.
			if rested, err = s.opts.Rest(ctx, lastID); err != nil {
				return
			}
		}
		if len(evs) == 0 && !rested {
			if !s.wait(ctx, src, &idle) {
				return
			}
		}
		if evs, err = src.Feed(ctx, after); err != nil {
			return // the client resumes from the last id it got
		}
	}
}

// wait waits for news, or until the keep-alive is due and sent; false:
// the stream ends.
func (s *stream) wait(ctx context.Context, src Source, idle *time.Time) bool {
	wctx, cancel := context.WithDeadline(ctx, idle.Add(s.opts.KeepAlive))
	err := src.Wait(wctx)
	timedOut := wctx.Err() != nil
	cancel()
	switch {
	case ctx.Err() != nil:
		return false
	case timedOut:
		if s.comment("keep-alive") != nil {
			return false
		}
		*idle = time.Now()
	case err != nil:
		return false
	}
	return true
}

// write sends a batch of events and flushes it.
func (s *stream) write(evs []*store.Event) error {
	s.deadline()
	for _, ev := range evs {
		if _, err := fmt.Fprintf(s.w, "id: %s\nevent: %s\ndata: %s\n\n", ev.Cursor, ev.Type, oneLine(ev.JSON())); err != nil {
			return fmt.Errorf("write event: %w", err)
		}
	}
	if err := s.rc.Flush(); err != nil {
		return fmt.Errorf("flush events: %w", err)
	}
	return nil
}

// oneLine returns JSON b on one line: a data: field ends at a line
// break, and only whitespace between tokens can hold one (strings escape
// theirs).
func oneLine(b []byte) []byte {
	if !bytes.ContainsAny(b, "\r\n") {
		return b
	}
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("\r"), []byte(" ")), []byte("\n"), []byte(" "))
	}
	return out.Bytes()
}

// comment sends an SSE comment, which clients ignore.
func (s *stream) comment(text string) error {
	s.deadline()
	if _, err := io.WriteString(s.w, ": "+text+"\n\n"); err != nil {
		return fmt.Errorf("write comment: %w", err)
	}
	return s.rc.Flush()
}

// deadline sets the write deadline for the next write; a writer without
// deadlines (a test recorder) has none.
func (s *stream) deadline() {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
}

func (o Options) withDefaults() Options {
	if o.KeepAlive <= 0 {
		o.KeepAlive = DefaultKeepAlive
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.Error == nil {
		o.Error = WriteError
	}
	return o
}

// WriteError writes err as the API's error object: a bad cursor is 400
// (invalid), a canceled request writes nothing, anything else is 503
// (unavailable: the store could not be read).
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	body := api.ErrorBody{Error: api.Error{Code: api.CodeUnavailable, Message: "read events: " + err.Error()}}
	status := http.StatusServiceUnavailable
	switch {
	case errors.Is(err, store.ErrBadCursor):
		status = http.StatusBadRequest
		body.Error = api.Error{Code: api.CodeInvalid, Message: "bad event cursor",
			Hint:    "resume with the id: of an event this server sent (Last-Event-ID), or leave it out (?from=start replays from the first event)",
			Details: []api.Detail{{Message: cursorSource(r) + " is not a cursor of this server's event feed"}}}
	case r.Context().Err() != nil:
		return
	}
	writeJSON(w, status, body.Error)
}

// writeJSON writes the error object e with HTTP status status.
func writeJSON(w http.ResponseWriter, status int, e api.Error) {
	b, _ := json.Marshal(api.ErrorBody{Error: e}) // strings only: cannot fail
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// cursorSource names where the cursor came from.
func cursorSource(r *http.Request) string {
	if r.Header.Get("Last-Event-ID") != "" {
		return "the Last-Event-ID header"
	}
	return "?after="
}
