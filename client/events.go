package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

// Event is one Server-Sent Event of a stream.
type Event struct {
	ID   string          // its cursor: a stream resumed after it (Last-Event-ID) starts with the next
	Type string          // the event's type (text-delta, tool-call, ..., finish)
	Data json.RawMessage // the event as one JSON object, as agentctl events prints it
}

// Stream says which events Client.Events reads, and how.
type Stream struct {
	// RunID selects a run's events and those of the runs below it in its
	// tree (GET /v1/runs/{id}/events); "" the whole server's (GET
	// /v1/events).
	RunID string
	// After resumes after the event with this id. Without it, a run's
	// stream starts at its first event and the whole server's at the
	// present, unless FromStart or Since says otherwise.
	After string
	// FromStart, with no After, starts at the first event (?from=start):
	// for the whole server, a replay of its history.
	FromStart bool
	// Since, with no After, starts at the first event stamped at or after
	// it (?since=).
	Since time.Time
	// Follow keeps reading as new events are committed, until fn says
	// stop or ctx ends. Without it, Events returns once the server has
	// sent the events stored so far.
	Follow bool
	// UntilRest asks the server to end a run's stream when the run is at
	// rest and every event is sent (?until=rest); following, Ended then
	// says whether to read on.
	UntilRest bool
	// Ended, when set, is called each time a stream ends or drops, before
	// the client reconnects; stop ends Events.
	Ended func(ctx context.Context) (stop bool, err error)
}

// Reconnecting: how long between attempts, and how many failures in a row
// end a stream.
const (
	retryFirst = 100 * time.Millisecond
	retryMax   = 2 * time.Second
	maxRetries = 10
)

// Events reads the events s selects and hands each to fn, in order. A
// stream that ends or drops while following is resumed after the last
// event with Last-Event-ID: no event is lost or repeated. It returns when
// fn says stop, when Ended says stop, when ctx ends (nil), or when the
// server cannot be reached after several attempts.
func (c *Client) Events(ctx context.Context, s Stream, fn func(Event) (stop bool, err error)) error {
	path := "/v1/events"
	if s.RunID != "" {
		path = runPath(s.RunID, "events")
	}
	q := url.Values{}
	if !s.Follow {
		q.Set("follow", "false")
	}
	if s.UntilRest {
		q.Set("until", "rest")
	}
	switch {
	case s.FromStart:
		q.Set("from", "start")
	case !s.Since.IsZero():
		q.Set("since", s.Since.UTC().Format(time.RFC3339Nano))
	}
	failures, delay := 0, retryFirst
	for {
		n, stop, err := c.stream(ctx, path, q, &s, fn)
		if n > 0 {
			failures, delay = 0, retryFirst
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case stop:
			return nil
		case err == nil && !s.Follow:
			return nil
		case err != nil && !retryable(err):
			return err
		case err != nil:
			failures++
		}
		if s.Ended != nil {
			stop, eerr := s.Ended(ctx)
			switch {
			case eerr != nil && !retryable(eerr):
				return eerr
			case eerr == nil && stop:
				return nil
			case eerr != nil:
				failures, err = failures+1, eerr
			}
		}
		if failures >= maxRetries {
			return err
		}
		if failures > 0 || n == 0 {
			// A stream that brought nothing waits before the next, too.
			if !sleep(ctx, delay) {
				return nil
			}
			delay = min(delay*2, retryMax)
		}
	}
}

// retryable reports whether a stream failed in a way worth reconnecting
// for: the server could not be reached or cannot answer for now
// (transient), or the connection dropped.
func retryable(err error) bool {
	var de *dropError
	return transient(err) || errors.As(err, &de)
}

// dropError is a stream whose connection broke mid-way.
type dropError struct{ err error }

func (e *dropError) Error() string { return fmt.Sprintf("event stream dropped: %v", e.err) }
func (e *dropError) Unwrap() error { return e.err }

// stream reads one connection's events, and returns how many it handed
// to fn and whether fn said stop. Not following, it leaves the stream when
// the server falls silent (a keep-alive comment: it has sent every stored
// event).
func (c *Client) stream(ctx context.Context, path string, q url.Values, s *Stream, fn func(Event) (bool, error)) (n int, stop bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, rcancel, err := c.send(ctx, request{method: http.MethodGet, path: path, query: q, timeout: -1, accept: "text/event-stream", lastID: s.After})
	if err != nil {
		return n, false, err
	}
	defer rcancel()
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return n, false, fmt.Errorf("events from %s: the server answered %q, not an event stream", c.server, ct)
	}
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	var ev Event
	var data bytes.Buffer
	for {
		line, err := readLine(r)
		if err != nil {
			if errors.Is(err, io.EOF) && data.Len() == 0 && ev.Type == "" {
				return n, false, nil // the server ended the stream
			}
			if ctx.Err() != nil {
				return n, false, nil
			}
			return n, false, &dropError{err}
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch {
		case line == "":
			if data.Len() == 0 {
				ev = Event{}
				continue
			}
			ev.Data = json.RawMessage(bytes.Clone(data.Bytes()))
			data.Reset()
			if ev.ID != "" {
				s.After = ev.ID
			}
			n++
			if stop, err := fn(ev); err != nil || stop {
				return n, stop, err
			}
			ev = Event{}
		case field == "" && !s.Follow:
			return n, false, nil // a comment: a keep-alive, all stored events sent
		case field == "id":
			ev.ID = value
		case field == "event":
			ev.Type = value
		case field == "data":
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(value)
		}
	}
}

// readLine reads one line of a stream without its end (\n or \r\n), up
// to maxBody bytes.
func readLine(r *bufio.Reader) (string, error) {
	var b []byte
	for {
		chunk, err := r.ReadSlice('\n')
		b = append(b, chunk...)
		if len(b) > maxBody {
			return "", fmt.Errorf("an event over %d bytes", maxBody)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return "", err
		}
		return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
	}
}

// sleep waits d unless ctx ends first; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Rest follows run runID's events until it comes to rest (completed,
// failed, stalled or suspended: it waits for nobody but a human or a new
// command), then returns it as it stands. A command the server answered
// 202 (still advancing) is followed so.
func (c *Client) Rest(ctx context.Context, runID string) (*engine.RunDetail, error) {
	var last *engine.RunDetail
	ended := func(ctx context.Context) (bool, error) {
		d, err := c.Run(ctx, runID)
		if err != nil {
			return false, err
		}
		last = d
		return resting(d.Status), nil
	}
	// The run may have come to rest before the stream began.
	if stop, err := ended(ctx); err != nil || stop {
		return last, err
	}
	s := Stream{RunID: runID, Follow: true, UntilRest: true, Ended: ended}
	if err := c.Events(ctx, s, func(Event) (bool, error) { return false, nil }); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("follow run %s: %w", runID, err)
	}
	return last, nil
}

// resting reports whether a run in status s waits for nobody but a human
// or a new command.
func resting(s store.Status) bool {
	return s != store.Queued && s != store.Running
}
