package sse

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

// feed is an in-memory event feed: cursors are "c<n>", n the number of
// events up to and including it.
type feed struct {
	mu    sync.Mutex
	evs   []*store.Event
	limit int // batch size; 0: all
	calls int
	fail  error // Feed fails with it once set
	n     *Notifier
	state map[string]store.Status // runs' statuses; default running
	runs  chan string             // when set, gets the id of each Run asked for
	clock time.Time               // the next event's time; each is a minute after the last
}

func newFeed() *feed {
	return &feed{n: NewNotifier(), state: map[string]store.Status{}, clock: time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)}
}

// set sets run id's status and wakes the followers.
func (f *feed) set(id string, st store.Status) {
	f.mu.Lock()
	f.state[id] = st
	f.mu.Unlock()
	f.n.Notify()
}

// add appends an event of run runID and wakes the followers.
func (f *feed) add(runID string, typ store.EventType, data string) *store.Event {
	f.mu.Lock()
	ev := &store.Event{ID: int64(len(f.evs) + 1), RunID: runID, Type: typ, Data: json.RawMessage(data), At: f.clock}
	f.clock = f.clock.Add(time.Minute)
	ev.Cursor = "c" + strconv.Itoa(len(f.evs)+1)
	f.evs = append(f.evs, ev)
	f.mu.Unlock()
	f.n.Notify()
	return ev
}

func (f *feed) Feed(ctx context.Context, after string, _ store.FeedFilter) ([]*store.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail != nil {
		return nil, f.fail
	}
	i := 0
	if after != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(after, "c"))
		if !strings.HasPrefix(after, "c") || err != nil || n < 0 || n > len(f.evs) {
			return nil, fmt.Errorf("feed after %q: %w", after, store.ErrBadCursor)
		}
		i = n
	}
	j := len(f.evs)
	switch {
	case f.limit > 0:
		j = min(j, i+f.limit)
	case f.limit < 0:
		j = min(j, i) // holding back
	}
	out := make([]*store.Event, 0, j-i)
	for _, ev := range f.evs[i:j] {
		x := *ev // a store reads fresh events each time
		out = append(out, &x)
	}
	return out, nil
}

func (f *feed) FeedEnd(ctx context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return "c" + strconv.Itoa(len(f.evs)), nil
}

func (f *feed) FeedAt(ctx context.Context, since time.Time) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, ev := range f.evs {
		if !ev.At.Before(since) {
			return "c" + strconv.Itoa(i), nil
		}
	}
	return "c" + strconv.Itoa(len(f.evs)), nil
}

func (f *feed) Run(ctx context.Context, id string) (*store.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runs != nil {
		f.runs <- id
	}
	return &store.Run{ID: id, Path: []string{"root", id}, Status: cmp.Or(f.state[id], store.Running)}, nil
}

func (f *feed) Tree(ctx context.Context, root string) ([]*store.Run, error) {
	r, _ := f.Run(ctx, root)
	return []*store.Run{r}, nil
}

func (f *feed) Events(ctx context.Context, runID string, after int64) ([]*store.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*store.Event
	for _, ev := range f.evs {
		if ev.RunID == runID && ev.ID > after {
			out = append(out, ev)
		}
	}
	return out, nil
}

// sseEvent is one event as a client reads it.
type sseEvent struct{ id, typ, data string }

// client reads an event stream.
type client struct {
	resp     *http.Response
	lines    *bufio.Scanner
	comments []string
}

// connect opens the stream at url, resuming after lastID when set.
func connect(t *testing.T, url, lastID string) *client {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s %s: %s", url, resp.Status, resp.Header.Get("Content-Type"), b)
	}
	return &client{resp: resp, lines: bufio.NewScanner(resp.Body)}
}

// next reads the next event; io.EOF when the stream ended.
func (c *client) next() (sseEvent, error) {
	var ev sseEvent
	for c.lines.Scan() {
		line := c.lines.Text()
		switch {
		case line == "" && ev != (sseEvent{}):
			return ev, nil
		case line == "":
		case strings.HasPrefix(line, ": "):
			c.comments = append(c.comments, line[2:])
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		default:
			return ev, fmt.Errorf("unexpected line %q", line)
		}
	}
	if err := c.lines.Err(); err != nil {
		return ev, err
	}
	return ev, io.EOF
}

func (c *client) mustNext(t *testing.T) sseEvent {
	t.Helper()
	ev, err := c.next()
	if err != nil {
		t.Fatalf("read event: %v", err)
	}
	return ev
}

// want is how ev must reach a client: with its run's path.
func want(ev *store.Event) sseEvent {
	x := *ev
	x.Path = []string{"root", ev.RunID}
	return sseEvent{id: ev.Cursor, typ: string(ev.Type), data: string(x.JSON())}
}

// serve starts a server streaming f with opts; done receives once per
// stream that ended.
func serve(t *testing.T, f *feed, opts Options) (url string, done chan struct{}) {
	t.Helper()
	done = make(chan struct{}, 16)
	h := Handler(f, f.n.Wait, opts)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		h(w, r, store.FeedFilter{RunID: "r1"})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1/runs/r1/events", done
}

// ended waits for a stream to end on the server.
func ended(t *testing.T, done chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end on the server")
	}
}

func TestFollowToRest(t *testing.T) {
	f := newFeed()
	url, done := serve(t, f, Options{})
	call := f.add("r1", engine.EventToolCall, `{"args":{},"callId":"c1","tool":"ls"}`)
	c := connect(t, url+"?until=rest", "")
	if got := c.mustNext(t); got != want(call) {
		t.Fatalf("first event: got %+v, want %+v", got, want(call))
	}
	// Events committed while the client follows arrive as they come;
	// a sub-agent's run coming to rest is no rest for r1.
	var evs []*store.Event
	evs = append(evs, f.add("r1", engine.EventToolResult, `{"callId":"c1","result":"x","status":"done","tool":"ls"}`))
	evs = append(evs, f.add("r2", engine.EventFinish, `{"output":"child"}`))
	f.set("r2", store.Completed)
	for _, ev := range evs {
		if got := c.mustNext(t); got != want(ev) {
			t.Fatalf("got %+v, want %+v", got, want(ev))
		}
	}
	// r1 comes to rest; the stream ends once it has sent what came
	// before.
	last := f.add("r1", engine.EventFinish, `{"output":"done"}`)
	f.set("r1", store.Completed)
	if got := c.mustNext(t); got != want(last) {
		t.Fatalf("got %+v, want %+v", got, want(last))
	}
	if ev, err := c.next(); err != io.EOF {
		t.Fatalf("after the run's finish: got %+v, %v; want the end of the stream", ev, err)
	}
	ended(t, done)
}

func TestResumeWithLastEventID(t *testing.T) {
	f := newFeed()
	f.limit = 2 // several batches
	url, _ := serve(t, f, Options{})
	var all []*store.Event
	for i := range 3 {
		all = append(all, f.add("r1", engine.EventTextDelta, fmt.Sprintf(`{"text":"%d"}`, i)))
	}
	c := connect(t, url+"?until=rest", "")
	var got []sseEvent
	for range 2 {
		got = append(got, c.mustNext(t))
	}
	c.resp.Body.Close() // the client drops mid-run
	for i := 3; i < 6; i++ {
		all = append(all, f.add("r1", engine.EventTextDelta, fmt.Sprintf(`{"text":"%d"}`, i)))
	}
	all = append(all, f.add("r1", engine.EventToolCallApproval, `{"args":{},"callId":"c1","gate":{},"tool":"rm"}`))
	f.set("r1", store.Suspended)
	c = connect(t, url+"?until=rest", got[len(got)-1].id)
	for {
		ev, err := c.next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	if len(got) != len(all) {
		t.Fatalf("got %d events, want %d: %+v", len(got), len(all), got)
	}
	for i, ev := range all {
		if got[i] != want(ev) {
			t.Errorf("event %d: got %+v, want %+v", i, got[i], want(ev))
		}
	}
}

func TestAfterQueryWithoutHeader(t *testing.T) {
	f := newFeed()
	url, _ := serve(t, f, Options{})
	f.add("r1", engine.EventTextDelta, `{"text":"a"}`)
	b := f.add("r1", engine.EventStalled, `{"error":"no model"}`)
	f.set("r1", store.Stalled)
	// The header wins over ?after= (a browser's EventSource reconnects to
	// the same address with the header).
	c := connect(t, url+"?until=rest&after=c0", "c1")
	if got := c.mustNext(t); got != want(b) {
		t.Fatalf("got %+v, want %+v", got, want(b))
	}
	c = connect(t, url+"?until=rest&after=c1", "")
	if got := c.mustNext(t); got != want(b) {
		t.Fatalf("?after=c1: got %+v, want %+v", got, want(b))
	}
}

func TestBadCursor(t *testing.T) {
	f := newFeed()
	url, _ := serve(t, f, Options{})
	for _, tc := range []struct{ query, header, want string }{
		{"", "nope", "Last-Event-ID"},
		{"?after=c99", "", "?after="},
		{"?until=never", "", "until"},
		{"?until=rest&after=x", "", "?after="},
	} {
		req, _ := http.NewRequest(http.MethodGet, url+tc.query, nil)
		if tc.header != "" {
			req.Header.Set("Last-Event-ID", tc.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var body api.ErrorBody
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatalf("%s: body %s: %v", tc.query, b, err)
		}
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/json" ||
			body.Error.Code != api.CodeInvalid || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s: got %s %s %s; want 400, invalid, naming %s", tc.query, tc.header, resp.Status, resp.Header.Get("Content-Type"), b, tc.want)
		}
	}
}

func TestStoreUnavailable(t *testing.T) {
	f := newFeed()
	f.fail = errors.New("database is locked")
	url, _ := serve(t, f, Options{})
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body api.ErrorBody
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || body.Error.Code != api.CodeUnavailable {
		t.Fatalf("got %s %+v; want 503 unavailable", resp.Status, body)
	}
}

func TestClientGone(t *testing.T) {
	f := newFeed()
	url, done := serve(t, f, Options{})
	f.add("r1", engine.EventTextDelta, `{"text":"a"}`)
	c := connect(t, url, "")
	c.mustNext(t)
	c.resp.Body.Close()
	ended(t, done)
}

func TestServerStops(t *testing.T) {
	f := newFeed()
	stop := make(chan struct{})
	url, done := serve(t, f, Options{Stop: stop})
	f.add("r1", engine.EventTextDelta, `{"text":"a"}`)
	c := connect(t, url, "")
	c.mustNext(t)
	close(stop)
	if ev, err := c.next(); err != io.EOF {
		t.Fatalf("after stop: got %+v, %v; want the end of the stream", ev, err)
	}
	ended(t, done)
}

func TestKeepAlive(t *testing.T) {
	f := newFeed()
	url, _ := serve(t, f, Options{KeepAlive: 10 * time.Millisecond})
	c := connect(t, url, "")
	// Nothing happens: a comment keeps the stream open; an event still
	// arrives after it.
	if !c.lines.Scan() || c.lines.Text() != ": keep-alive" {
		t.Fatalf("idle stream: got %q, %v; want a keep-alive comment", c.lines.Text(), c.lines.Err())
	}
	ev := f.add("r1", engine.EventFinish, `{"output":"x"}`)
	if got := c.mustNext(t); got != want(ev) {
		t.Fatalf("got %+v, want %+v", got, want(ev))
	}
}

func TestSlowClient(t *testing.T) {
	f := newFeed()
	f.limit = 10
	big := json.RawMessage(`{"text":"` + strings.Repeat("x", 8<<10) + `"}`)
	const n = 4000 // 32 MiB: more than the socket buffers hold
	for range n {
		f.add("r1", engine.EventTextDelta, string(big))
	}
	url, done := serve(t, f, Options{WriteTimeout: 200 * time.Millisecond})
	// A client that sends its request and never reads.
	conn, err := net.Dial("tcp", strings.TrimPrefix(strings.SplitN(url, "/v1", 2)[0], "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/runs/r1/events HTTP/1.1\r\nHost: x\r\n\r\n")
	ended(t, done)
	f.mu.Lock()
	calls := f.calls
	f.mu.Unlock()
	// The stream pulled batches as the client took them, and gave up
	// once it stopped: it never read the whole feed into memory.
	if calls >= n/f.limit {
		t.Fatalf("the feed was read %d times, all of it: want the stream cut off while the client does not read", calls)
	}
}

// TestRestWaitsForHeldBackEvents: a run at rest whose last events the
// feed holds back (PostgreSQL, while another transaction is open) keeps
// the stream open until they come.
func TestRestWaitsForHeldBackEvents(t *testing.T) {
	f := newFeed()
	url, done := serve(t, f, Options{})
	first := f.add("r1", engine.EventToolCall, `{"args":{},"callId":"c1","tool":"ls"}`)
	c := connect(t, url+"?until=rest", "")
	if got := c.mustNext(t); got != want(first) {
		t.Fatalf("got %+v, want %+v", got, want(first))
	}
	runs := make(chan string, 100)
	f.mu.Lock()
	f.limit = -1 // the feed holds back what comes next
	f.runs = runs
	f.mu.Unlock()
	last := f.add("r1", engine.EventFinish, `{"output":"x"}`)
	f.set("r1", store.Completed)
	// Three times the stream sees the run at rest and an empty feed.
	for range 3 {
		f.n.Notify()
		select {
		case <-runs:
		case <-done:
			t.Fatal("the stream ended before the run's last event came")
		}
	}
	f.mu.Lock()
	f.limit, f.runs = 0, nil
	f.mu.Unlock()
	f.n.Notify()
	if got := c.mustNext(t); got != want(last) {
		t.Fatalf("got %+v, want %+v", got, want(last))
	}
	ended(t, done)
}

func TestMultilineData(t *testing.T) {
	f := newFeed()
	url, _ := serve(t, f, Options{})
	f.add("r1", engine.EventFinish, "{\n  \"output\": \"a\\nb\"\n}")
	c := connect(t, url, "")
	got := c.mustNext(t)
	if want := `{"type":"finish","runId":"r1","path":["root","r1"],"at":"2026-12-05T09:00:00Z","output":"a\nb"}`; got.data != want {
		t.Fatalf("data: got %s, want %s", got.data, want)
	}
}

// TestStart: without a cursor, a run's stream starts at its first event
// and the whole server's at the present; ?from= and ?since= say
// otherwise, and a cursor (a reconnection) overrides both.
func TestStart(t *testing.T) {
	f := newFeed()
	for range 4 {
		f.add("r1", engine.EventToolCall, `{}`) // 09:00, 09:01, 09:02, 09:03
	}
	now := func() time.Time { return time.Date(2026, 12, 5, 9, 4, 0, 0, time.UTC) }
	for _, tc := range []struct {
		query string
		whole bool
		want  string // the cursor to read after; "-" none (from the first); "400 ..." refused
	}{
		{"", true, "c4"},
		{"", false, "-"},
		{"from=start", true, "-"},
		{"from=now", false, "c4"},
		{"since=2026-12-05T09:02:00Z", true, "c2"},
		{"since=2026-12-05T10:02:00%2B01:00", true, "c2"},
		{"since=150s", true, "c2"},
		{"since=1d", false, "c0"},
		{"since=2027-01-01T00:00:00Z", true, "c4"},
		{"from=start&since=1h", true, "400 ?from= and ?since= exclude each other"},
		{"from=begin", true, `400 bad ?from="begin"`},
		{"since=yesterday", true, `400 bad ?since="yesterday": want a time (2026-12-05T09:00:00Z) or a duration ago (90m, 7d)`},
		{"since=-1h", true, `400 bad ?since="-1h": want a time`},
	} {
		q, _ := url.ParseQuery(tc.query)
		start, aerr := startOf(f, q, tc.whole, now)
		got := "-"
		switch {
		case aerr != nil:
			got = "400 " + aerr.Message
		case start != nil:
			r := httptest.NewRequest("GET", "/v1/events", nil)
			c, err := start(r)
			if err != nil {
				t.Fatal(err)
			}
			got = c
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("?%s (whole %v): got %q, want %q", tc.query, tc.whole, got, tc.want)
		}
	}
}

// TestStartWhole: the whole server's stream, over HTTP: without a
// cursor it sends only what comes after it started; a reconnection's
// Last-Event-ID wins over ?from=now.
func TestStartWhole(t *testing.T) {
	f := newFeed()
	h := Handler(f, f.n.Wait, Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(w, r, store.FeedFilter{}) }))
	t.Cleanup(srv.Close)
	old := f.add("r1", engine.EventToolCall, `{"n":1}`)
	c := connect(t, srv.URL+"/v1/events", "")
	fresh := f.add("r1", engine.EventToolCall, `{"n":2}`)
	if got := c.mustNext(t); got != want(fresh) {
		t.Fatalf("a new stream: got %+v, want only what came after it, %+v", got, want(fresh))
	}
	c = connect(t, srv.URL+"/v1/events?from=now", "")
	f.add("r1", engine.EventToolCall, `{"n":3}`)
	if got := c.mustNext(t); got.data != `{"type":"tool-call","runId":"r1","path":["root","r1"],"at":"2026-12-05T09:02:00Z","n":3}` {
		t.Fatalf("?from=now: got %+v", got)
	}
	c = connect(t, srv.URL+"/v1/events?from=now", old.Cursor)
	if got := c.mustNext(t); got != want(fresh) {
		t.Fatalf("resumed after %s with ?from=now: got %+v, want %+v", old.Cursor, got, want(fresh))
	}
}
