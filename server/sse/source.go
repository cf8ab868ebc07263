package sse

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine/store"
)

// Feeder is the part of a store.ServerStore a stream reads: the feed,
// runs for the paths of their events, and, to tell when a run has come
// to rest, its tree and events.
type Feeder interface {
	Feed(ctx context.Context, after string, f store.FeedFilter) ([]*store.Event, error)
	Run(ctx context.Context, id string) (*store.Run, error)
	Tree(ctx context.Context, rootID string) ([]*store.Run, error)
	Events(ctx context.Context, runID string, after int64) ([]*store.Event, error)
	FeedEnd(ctx context.Context) (string, error)
	FeedAt(ctx context.Context, since time.Time) (string, error)
}

// FromStore returns the Source of the events st's feed selects with f,
// waking on wait (a Notifier's Wait). Each event carries its run's path,
// as agentctl events prints it.
func FromStore(st Feeder, f store.FeedFilter, wait func(context.Context) error) Source {
	paths := map[string][]string{} // by run id; one stream's, read by one goroutine
	return Source{
		Feed: func(ctx context.Context, after string) ([]*store.Event, error) {
			evs, err := st.Feed(ctx, after, f)
			if err != nil {
				return nil, err
			}
			if len(paths) > maxPaths {
				clear(paths)
			}
			for _, ev := range evs {
				if ev.Path != nil {
					continue
				}
				p, ok := paths[ev.RunID]
				if !ok {
					r, err := st.Run(ctx, ev.RunID)
					if err != nil {
						return nil, fmt.Errorf("event %s: run %s: %w", ev.Cursor, ev.RunID, err)
					}
					p = r.Path
					paths[ev.RunID] = p
				}
				ev.Path = p
			}
			return evs, nil
		},
		Wait: wait,
	}
}

// maxPaths bounds the paths a stream keeps (GET /v1/events sees every run).
const maxPaths = 10000

// Wake blocks until a notification may have arrived or d passes: a
// backend.Wakeup on backend.ChannelEvents (PostgreSQL's LISTEN; on
// SQLite it waits d).
type Wake func(ctx context.Context, d time.Duration) error

// Notifier shares one Wake among every stream of a server, so that a
// thousand followers hold one PostgreSQL LISTEN connection, not a
// thousand: Run calls the Wake in a loop, and each return wakes every
// Wait.
type Notifier struct {
	mu sync.Mutex
	ch chan struct{} // closed and replaced at each wake-up
}

// NewNotifier returns a Notifier; Run drives it.
func NewNotifier() *Notifier { return &Notifier{ch: make(chan struct{})} }

// Run wakes the waiters each time wake returns, waiting at most poll
// each time (the poll of SQLite, a safety net on PostgreSQL), until ctx
// ends. A failing wake (a lost connection) is retried after poll.
func (n *Notifier) Run(ctx context.Context, wake Wake, poll time.Duration) {
	for {
		if err := wake(ctx, poll); err != nil && ctx.Err() == nil {
			t := time.NewTimer(poll)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
		n.Notify()
	}
}

// Notify wakes every Wait under way.
func (n *Notifier) Notify() {
	n.mu.Lock()
	close(n.ch)
	n.ch = make(chan struct{})
	n.mu.Unlock()
}

// Wait blocks until the next wake-up or until ctx ends.
func (n *Notifier) Wait(ctx context.Context) error {
	n.mu.Lock()
	ch := n.ch
	n.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Handler returns what the server calls for GET /v1/runs/{id}/events and
// GET /v1/events, once it has authenticated the caller and resolved the
// run: it streams the events st's feed selects with f. With ?until=rest
// on a run's stream, the stream ends when the run comes to rest (Rest).
//
// Without a cursor (Last-Event-ID, ?after=), a run's stream starts at its
// first event and the whole server's at the present: a history of
// millions of events is replayed only when asked, with ?from=start, or
// from a time with ?since= (RFC 3339, or a duration ago: 90m, 7d).
func Handler(st Feeder, wait func(context.Context) error, opts Options) func(w http.ResponseWriter, r *http.Request, f store.FeedFilter) {
	return func(w http.ResponseWriter, r *http.Request, f store.FeedFilter) {
		o := opts.withDefaults()
		start, err := startOf(st, r.URL.Query(), f.RunID == "" && f.Root == "", time.Now)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, *err)
			return
		}
		o.Start = start
		switch until, run := r.URL.Query().Get("until"), cmp.Or(f.RunID, f.Root); {
		case until == "":
		case until == "rest" && run != "":
			o.Rest = RunRest(st, f)
		default:
			writeJSON(w, http.StatusBadRequest, api.Error{Code: api.CodeInvalid, Message: fmt.Sprintf("bad ?until=%q", until),
				Hint: "until=rest, on a run's events, ends the stream when the run comes to rest"})
			return
		}
		Serve(w, r, FromStore(st, f, wait), o)
	}
}

// RunRest returns a Rest for a stream of f's events, a run's (RunID) or
// a tree's (Root): it ends the stream once the run is at rest
// (suspended, stalled, completed or failed: it waits for nobody but a
// human or a new command) and none of the events the stream selects has
// an ID above the last one sent. The second half holds a stream open on
// PostgreSQL while another transaction holds back the feed (see
// store.ServerStore.Feed) past the run's last events.
func RunRest(st Feeder, f store.FeedFilter) func(ctx context.Context, lastID int64) (bool, error) {
	id := cmp.Or(f.RunID, f.Root)
	return func(ctx context.Context, lastID int64) (bool, error) {
		r, err := st.Run(ctx, id)
		if err != nil {
			return false, fmt.Errorf("run %s: %w", id, err)
		}
		switch r.Status {
		case store.Suspended, store.Stalled, store.Completed, store.Failed:
		default:
			return false, nil
		}
		if lastID == 0 {
			return true, nil
		}
		runs := []*store.Run{r}
		if f.RunID == "" {
			if runs, err = st.Tree(ctx, f.Root); err != nil {
				return false, fmt.Errorf("tree of run %s: %w", id, err)
			}
		}
		for _, x := range runs {
			evs, err := st.Events(ctx, x.ID, lastID)
			if err != nil {
				return false, fmt.Errorf("events of run %s: %w", x.ID, err)
			}
			if len(evs) > 0 {
				return false, nil
			}
		}
		return true, nil
	}
}

// startOf reads ?from= and ?since= into where a stream with no cursor
// starts; whole is the whole server's stream, which starts at the
// present unless told.
func startOf(st Feeder, q url.Values, whole bool, now func() time.Time) (func(*http.Request) (string, error), *api.Error) {
	from, since := q.Get("from"), q.Get("since")
	hint := "?from=start replays from the first event, ?from=now starts at the present, ?since= from a time (RFC 3339, or a duration ago: 90m, 7d)"
	switch {
	case from != "" && since != "":
		return nil, &api.Error{Code: api.CodeInvalid, Message: "?from= and ?since= exclude each other", Hint: hint}
	case from == "start", from == "" && since == "" && !whole:
		return nil, nil
	case from == "now", from == "" && since == "":
		return func(r *http.Request) (string, error) { return st.FeedEnd(r.Context()) }, nil
	case from != "":
		return nil, &api.Error{Code: api.CodeInvalid, Message: fmt.Sprintf("bad ?from=%q", from), Hint: hint}
	}
	t, err := parseSince(since, now())
	if err != nil {
		return nil, &api.Error{Code: api.CodeInvalid, Message: fmt.Sprintf("bad ?since=%q: %v", since, err), Hint: hint}
	}
	return func(r *http.Request) (string, error) { return st.FeedAt(r.Context(), t) }, nil
}

// parseSince reads a time: RFC 3339, or a duration before now (Go's
// syntax, plus d for days).
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); ok && err != nil {
		n, aerr := strconv.Atoi(days)
		d, err = time.Duration(n)*24*time.Hour, aerr
	}
	if err != nil || d < 0 {
		return time.Time{}, errors.New("want a time (2026-12-05T09:00:00Z) or a duration ago (90m, 7d)")
	}
	return now.Add(-d), nil
}
