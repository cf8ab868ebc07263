package storetest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// server returns a handle as a ServerStore: every backend is one.
func server(e *env) store.ServerStore {
	e.t.Helper()
	s, ok := e.handle().(store.ServerStore)
	if !ok {
		e.t.Fatal("the store is not a store.ServerStore")
	}
	return s
}

// Tokens are stored by hash, found by hash, listed newest first, and
// revoked once by a unique prefix of their id.
func testTokens(e *env) {
	s := server(e)
	mk := func(secret, user string, groups ...string) *store.Token {
		t := &store.Token{User: user, Groups: groups, Hash: sha256.Sum256([]byte(secret)), CreatedBy: "root",
			ExpiresAt: e.clock.now().Add(90 * 24 * time.Hour)}
		if err := s.CreateToken(e.ctx, t); err != nil {
			e.t.Fatal(err)
		}
		e.clock.add(time.Second)
		return t
	}
	a := mk("secret-a", "alice", "ops", "oncall")
	b := mk("secret-b", "bot")
	if len(a.ID) != 12 || a.ID != fmt.Sprintf("%x", a.Hash[:6]) {
		e.e("token id %q: want the first 12 hex digits of its hash", a.ID)
	}
	got, err := s.TokenByHash(e.ctx, sha256.Sum256([]byte("secret-a")))
	if err != nil || got.User != "alice" || strings.Join(got.Groups, ",") != "ops,oncall" || got.Hash != a.Hash ||
		got.CreatedBy != "root" || !got.CreatedAt.Equal(a.CreatedAt) || !got.ExpiresAt.Equal(a.ExpiresAt) || !got.RevokedAt.IsZero() {
		e.e("TokenByHash: %+v, %v; want %+v", got, err, a)
	}
	if got, err := s.TokenByHash(e.ctx, sha256.Sum256([]byte("secret-b"))); err != nil || got.Groups == nil || len(got.Groups) != 0 {
		e.e("a token with no groups: %+v, %v", got, err)
	}
	if _, err := s.TokenByHash(e.ctx, sha256.Sum256([]byte("nope"))); !errors.Is(err, store.ErrNotFound) {
		e.e("an unknown hash: %v, want ErrNotFound", err)
	}
	list, err := s.Tokens(e.ctx)
	if err != nil || len(list) != 2 || list[0].ID != b.ID || list[1].ID != a.ID {
		e.e("Tokens: %v, %v; want bot's then alice's", list, err)
	}
	if _, err := s.RevokeToken(e.ctx, "zz", e.clock.now()); !errors.Is(err, store.ErrNotFound) {
		e.e("revoke an unknown id: %v", err)
	}
	at := e.clock.now()
	r, err := s.RevokeToken(e.ctx, a.ID[:5], at)
	if err != nil || r.ID != a.ID || !r.RevokedAt.Equal(at) {
		e.e("revoke by prefix: %+v, %v", r, err)
	}
	if got, _ := s.TokenByHash(e.ctx, a.Hash); got == nil || !got.RevokedAt.Equal(at) {
		e.e("a revoked token reads %+v", got)
	}
	e.clock.add(time.Minute)
	if r, err := s.RevokeToken(e.ctx, a.ID, e.clock.now()); !errors.Is(err, store.ErrConflict) || r == nil || !r.RevokedAt.Equal(at) {
		e.e("revoke again: %+v, %v; want ErrConflict and the first revocation", r, err)
	}
	// Two tokens whose ids share a prefix: it is ambiguous.
	x := &store.Token{ID: b.ID[:4] + "00000000", User: "x", Hash: sha256.Sum256([]byte("x")), ExpiresAt: at}
	if err := s.CreateToken(e.ctx, x); err != nil {
		e.t.Fatal(err)
	}
	var ae *store.AmbiguousError
	if _, err := s.RevokeToken(e.ctx, b.ID[:4], at); !errors.As(err, &ae) || len(ae.Matches) != 2 {
		e.e("revoke by a shared prefix: %v, want an AmbiguousError", err)
	}
	// A second token with the same hash is refused.
	if err := s.CreateToken(e.ctx, &store.Token{User: "dup", Hash: a.Hash, ExpiresAt: at, ID: "dup000000000"}); err == nil {
		e.e("a second token with the same hash was stored")
	}
}

// e reports a failure of the current test.
func (e *env) e(format string, args ...any) { e.t.Helper(); e.t.Errorf(format, args...) }

// The feed returns events in commit order with cursors: resuming after
// any cursor repeats none and misses none; filters select a run or a
// tree; a cursor the store did not make is ErrBadCursor.
func testFeed(e *env) {
	s := server(e)
	if evs, err := s.Feed(e.ctx, "", store.FeedFilter{}); err != nil || len(evs) != 0 {
		e.t.Fatalf("feed of an empty store: %v, %v", evs, err)
	}
	root := newRun(e, s, "01A", lease)
	other := newRun(e, s, "01B", lease)
	child := &store.Run{ID: "01C", Agent: "db", Status: store.Running, SpecHash: "h1", State: []byte("{}"),
		ParentID: "01A", ParentCall: "call_1", RootID: "01A", Path: []string{"oncall", "db"}}
	if err := s.CreateRun(e.ctx, child, []byte("spec"), lease); err != nil {
		e.t.Fatal(err)
	}
	var want []string
	for i := range 4 {
		for _, r := range []*store.Run{root, other, child} {
			ev := []store.Event{{RunID: r.ID, Type: "step", Data: []byte(fmt.Sprintf(`{"n":%d}`, i))}}
			if i%2 == 1 {
				ev = append(ev, store.Event{RunID: r.ID, Type: "more", Data: []byte(fmt.Sprintf(`{"n":%d}`, i))})
			}
			if err := s.Checkpoint(e.ctx, lease, r, nil, ev...); err != nil {
				e.t.Fatal(err)
			}
			for _, x := range ev {
				want = append(want, x.RunID+":"+string(x.Type)+":"+string(x.Data))
			}
		}
	}
	feed := func(f store.FeedFilter, page int) []string { return pageFeed(e, s, f, page) }
	only := func(ids ...string) []string {
		var out []string
		for _, w := range want {
			for _, id := range ids {
				if strings.HasPrefix(w, id+":") {
					out = append(out, w)
				}
			}
		}
		return out
	}
	for _, page := range []int{0, 1, 2, 5} {
		if got := feed(store.FeedFilter{}, page); strings.Join(got, " ") != strings.Join(want, " ") {
			e.e("feed by pages of %d:\n got %v\nwant %v", page, got, want)
		}
	}
	if got := feed(store.FeedFilter{RunID: "01B"}, 3); strings.Join(got, " ") != strings.Join(only("01B"), " ") {
		e.e("feed of run 01B: %v", got)
	}
	if got := feed(store.FeedFilter{Root: "01A"}, 3); strings.Join(got, " ") != strings.Join(only("01A", "01C"), " ") {
		e.e("feed of the tree of 01A: %v", got)
	}
	// Resuming after the last event waits for the next.
	all, _ := s.Feed(e.ctx, "", store.FeedFilter{})
	last := all[len(all)-1].Cursor
	if evs, err := s.Feed(e.ctx, last, store.FeedFilter{}); err != nil || len(evs) != 0 {
		e.e("feed after the last event: %v, %v", evs, err)
	}
	if err := s.Checkpoint(e.ctx, lease, other, nil, store.Event{RunID: "01B", Type: "late"}); err != nil {
		e.t.Fatal(err)
	}
	if evs, err := s.Feed(e.ctx, last, store.FeedFilter{}); err != nil || len(evs) != 1 || evs[0].Type != "late" {
		e.e("feed after the last event, one more written: %v, %v", evs, err)
	}
	for _, bad := range []string{"x", "-1", "1.5", "1-2-3", "01", " 1", "99999999999999999999", "1-", "-"} {
		if _, err := s.Feed(e.ctx, bad, store.FeedFilter{}); !errors.Is(err, store.ErrBadCursor) {
			e.e("feed after cursor %q: %v, want ErrBadCursor", bad, err)
		}
	}
}

// pageFeed reads a feed to its end by pages of page events (0: the
// store's default), each event as run:type:data.
func pageFeed(e *env, s store.ServerStore, f store.FeedFilter, page int) []string {
	e.t.Helper()
	var out []string
	after := ""
	for n := 0; n < 100; n++ {
		f.Limit = page
		evs, err := s.Feed(e.ctx, after, f)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(evs) == 0 {
			return out
		}
		if page > 0 && len(evs) > page {
			e.t.Fatalf("a page of %d events, limit %d", len(evs), page)
		}
		for _, ev := range evs {
			if ev.Cursor == "" || ev.ID == 0 {
				e.t.Fatalf("event without a cursor or id: %+v", ev)
			}
			out = append(out, ev.RunID+":"+string(ev.Type)+":"+string(ev.Data))
		}
		after = evs[len(evs)-1].Cursor
	}
	e.t.Fatal("the feed does not end")
	return nil
}

// List pages newest first with Before, the last id of the previous page.
func testListPages(e *env) {
	s := e.handle()
	for _, id := range []string{"01A", "01B", "01C", "01D", "01E"} {
		newRun(e, s, id, lease)
	}
	suspended(e, s, "01F", 1)
	var got []string
	before := ""
	for range 10 {
		rs, err := s.List(e.ctx, store.Filter{Limit: 2, Before: before, Status: store.Running})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(rs) == 0 {
			break
		}
		for _, r := range rs {
			got = append(got, r.ID)
		}
		before = rs[len(rs)-1].ID
	}
	if strings.Join(got, " ") != "01E 01D 01C 01B 01A" {
		e.e("running runs by pages of 2: %v", got)
	}
	if _, err := s.List(e.ctx, store.Filter{Before: "01Z"}); !errors.Is(err, store.ErrBadCursor) {
		e.e("a cursor naming no run: %v, want ErrBadCursor", err)
	}
}

// withCalls creates a run of agent held by lease with calls in the given
// states (status/kind), made now.
func withCalls(e *env, s store.Store, id, agent string, states ...string) *store.Run {
	e.t.Helper()
	r := &store.Run{ID: id, Agent: agent, Status: store.Running, SpecHash: "h1", State: []byte("{}"), Step: 1}
	if err := s.CreateRun(e.ctx, r, []byte("spec"), lease); err != nil {
		e.t.Fatal(err)
	}
	var calls []*store.Call
	for i, st := range states {
		status, kind, _ := strings.Cut(st, "/")
		calls = append(calls, &store.Call{ID: fmt.Sprintf("call_%d", i+1), Seq: i + 1, Step: 1, Tool: "t", Args: []byte("{}"),
			Status: store.CallStatus(status), Kind: store.Kind(kind)})
	}
	if err := s.Checkpoint(e.ctx, lease, r, calls); err != nil {
		e.t.Fatal(err)
	}
	return r
}

// Waiting lists the calls waiting for a human across runs, oldest first
// (then by run and sequence), with their runs, by pages, filtered by
// agent and kind; delegations and calls decided are not listed.
func testWaiting(e *env) {
	s := server(e)
	withCalls(e, s, "01F", "release", "pending/approval") // the oldest: the ids are not in call order
	e.clock.add(time.Second)
	withCalls(e, s, "01B", "oncall", "pending/approval", "succeeded", "pending/approval")
	withCalls(e, s, "01A", "oncall", "pending/suspend")
	e.clock.add(time.Second)
	withCalls(e, s, "01C", "release", "interrupted/interrupted", "pending/delegation")
	e.clock.add(time.Second)
	withCalls(e, s, "01D", "oncall", "approved", "pending/approval")
	d := &store.Decision{RunID: "01D", CallID: "call_2", Action: store.Decline, By: "bob", OSUser: "bob"}
	if _, err := s.Decide(e.ctx, []*store.Decision{d}, store.Lease{}); err != nil {
		e.t.Fatal(err)
	}
	withCalls(e, s, "01E", "oncall", "pending/approval")
	list := func(f store.WaitingFilter) string {
		e.t.Helper()
		var out []string
		for range 20 {
			ws, err := s.Waiting(e.ctx, f)
			if err != nil {
				e.t.Fatal(err)
			}
			if len(ws) == 0 {
				break
			}
			for _, w := range ws {
				if w.Run == nil || w.Run.ID != w.Call.RunID || w.Cursor == "" {
					e.t.Fatalf("waiting call %+v: its run %+v", w.Call, w.Run)
				}
				out = append(out, w.Call.RunID+"/"+w.Call.ID)
			}
			if f.Limit == 0 {
				break
			}
			f.After = ws[len(ws)-1].Cursor
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		f    store.WaitingFilter
		want string
	}{
		{store.WaitingFilter{}, "01F/call_1 01A/call_1 01B/call_1 01B/call_3 01C/call_1 01E/call_1"},
		{store.WaitingFilter{Limit: 1}, "01F/call_1 01A/call_1 01B/call_1 01B/call_3 01C/call_1 01E/call_1"},
		{store.WaitingFilter{Limit: 2}, "01F/call_1 01A/call_1 01B/call_1 01B/call_3 01C/call_1 01E/call_1"},
		{store.WaitingFilter{Agent: "oncall", Limit: 2}, "01A/call_1 01B/call_1 01B/call_3 01E/call_1"},
		{store.WaitingFilter{Kind: store.KindApproval}, "01F/call_1 01B/call_1 01B/call_3 01E/call_1"},
		{store.WaitingFilter{Kind: store.KindSuspend}, "01A/call_1"},
		{store.WaitingFilter{Kind: store.KindInterrupted}, "01C/call_1"},
		{store.WaitingFilter{Agent: "nobody"}, ""},
	} {
		if got := list(tc.f); got != tc.want {
			e.e("Waiting(%+v) = %q, want %q", tc.f, got, tc.want)
		}
	}
	ws, _ := s.Waiting(e.ctx, store.WaitingFilter{Agent: "oncall", Kind: store.KindApproval, Limit: 1})
	if len(ws) != 1 || ws[0].Run.ID != "01B" || ws[0].Run.Agent != "oncall" || ws[0].Call.Tool != "t" ||
		!ws[0].Call.CreatedAt.Equal(e.clock.now().Add(-2*time.Second)) {
		e.e("first waiting approval: %+v %+v", ws[0].Call, ws[0].Run)
	}
	for _, bad := range []string{"x", "1.2", "a.01A.1", "1.01A.x", "1.01A.0", ".01A.1"} {
		if _, err := s.Waiting(e.ctx, store.WaitingFilter{After: bad}); !errors.Is(err, store.ErrBadCursor) {
			e.e("Waiting after %q: %v, want ErrBadCursor", bad, err)
		}
	}
	if _, err := s.Waiting(e.ctx, store.WaitingFilter{Kind: store.KindDelegation}); err == nil {
		e.e("Waiting for delegations: no error")
	}
}

// Stats counts runs by status, waiting calls by kind, and the oldest
// call waiting for approval.
func testStats(e *env) {
	s := server(e)
	if st, err := s.Stats(e.ctx); err != nil || len(st.Runs) != 0 || len(st.Waiting) != 0 || !st.OldestWaiting.IsZero() {
		e.t.Fatalf("stats of an empty store: %+v, %v", st, err)
	}
	withCalls(e, s, "01A", "oncall", "pending/suspend")
	first := e.clock.now()
	e.clock.add(time.Second)
	withCalls(e, s, "01B", "oncall", "pending/approval", "pending/approval")
	suspended(e, s, "01C", 1)
	withCalls(e, s, "01D", "oncall", "interrupted/interrupted", "pending/delegation")
	r := newRun(e, s, "01E", lease)
	r.Status = store.Completed
	if err := s.Checkpoint(e.ctx, lease, r, nil); err != nil {
		e.t.Fatal(err)
	}
	st, err := s.Stats(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if fmt.Sprint(st.Runs) != "map[completed:1 running:3 suspended:1]" {
		e.e("runs by status: %v", st.Runs)
	}
	if fmt.Sprint(st.Waiting) != "map[approval:3 interrupted:1 suspend:1]" {
		e.e("waiting calls by kind: %v", st.Waiting)
	}
	if want := first.Add(time.Second); !st.OldestWaiting.Equal(want) {
		e.e("oldest waiting approval: %v, want %v", st.OldestWaiting, want)
	}
}

// Sessions are stored by hash, found by hash, forgotten at sign-out,
// and those expired are dropped as others are made.
func testSessions(e *env) {
	s := server(e)
	now := e.clock.now()
	a := &store.Session{Hash: sha256.Sum256([]byte("a")), TokenHash: sha256.Sum256([]byte("tok1")), User: "alice", Groups: []string{"sre"}, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateSession(e.ctx, a); err != nil {
		e.t.Fatal(err)
	}
	got, err := s.SessionByHash(e.ctx, a.Hash)
	if err != nil || got.User != "alice" || got.TokenHash != a.TokenHash || strings.Join(got.Groups, ",") != "sre" || !got.ExpiresAt.Equal(a.ExpiresAt) {
		e.e("SessionByHash: %+v, %v", got, err)
	}
	if _, err := s.SessionByHash(e.ctx, sha256.Sum256([]byte("nope"))); !errors.Is(err, store.ErrNotFound) {
		e.e("an unknown session: %v", err)
	}
	e.clock.add(2 * time.Hour)
	b := &store.Session{Hash: sha256.Sum256([]byte("b")), TokenHash: sha256.Sum256([]byte("tok2")), User: "bob", ExpiresAt: e.clock.now().Add(time.Hour)}
	if err := s.CreateSession(e.ctx, b); err != nil {
		e.t.Fatal(err)
	}
	if _, err := s.SessionByHash(e.ctx, a.Hash); !errors.Is(err, store.ErrNotFound) {
		e.e("an expired session outlived the next sign-in: %v", err)
	}
	if err := s.DeleteSession(e.ctx, b.Hash); err != nil {
		e.t.Fatal(err)
	}
	if _, err := s.SessionByHash(e.ctx, b.Hash); !errors.Is(err, store.ErrNotFound) {
		e.e("a session after sign-out: %v", err)
	}
	if err := s.DeleteSession(e.ctx, b.Hash); err != nil {
		e.e("signing out twice: %v", err)
	}
}

// A key is first seen once: a second FirstSeen of it is a replay, even
// from eight callers at once (one is told it is new); keys seen before
// forget are forgotten.
func testFirstSeen(e *env) {
	s := server(e)
	now := e.clock.now()
	if fresh, err := s.FirstSeen(e.ctx, "sig-a", now, now.Add(-10*time.Minute)); err != nil || !fresh {
		e.e("the first FirstSeen of a key: %v, %v", fresh, err)
	}
	if fresh, err := s.FirstSeen(e.ctx, "sig-a", now, now.Add(-10*time.Minute)); err != nil || fresh {
		e.e("a replay of a key: %v, %v; want not new", fresh, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fresh, err := s.FirstSeen(e.ctx, "sig-b", now, now.Add(-10*time.Minute))
			if err != nil {
				e.e("FirstSeen at once: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if fresh {
				n++
			}
		}()
	}
	wg.Wait()
	if n != 1 {
		e.e("eight callers recording one key at once: %d told it is new, want 1", n)
	}
	later := now.Add(time.Hour)
	if fresh, err := s.FirstSeen(e.ctx, "sig-c", later, later.Add(-10*time.Minute)); err != nil || !fresh {
		e.e("a new key: %v, %v", fresh, err)
	}
	if fresh, err := s.FirstSeen(e.ctx, "sig-a", later, later.Add(-10*time.Minute)); err != nil || !fresh {
		e.e("a key seen before forget is still remembered: %v, %v", fresh, err)
	}
}

// The audit trail across runs: every decision, in the order made, with
// its run's agent and root and its call's tool; filtered by time and
// agent.
func testAudit(e *env) {
	s := e.handle()
	as, ok := s.(store.AuditStore)
	if !ok {
		e.t.Fatal("the store is not a store.AuditStore")
	}
	suspended(e, s, "01A", 1)
	suspended(e, s, "01B", 1)
	t0 := e.clock.now()
	if _, err := s.Decide(e.ctx, []*store.Decision{{RunID: "01A", CallID: "call_1", Action: store.Decline, By: "alice", OSUser: "alice", Reason: "no"}}, lease); err != nil {
		e.t.Fatal(err)
	}
	e.clock.add(time.Hour)
	if _, err := s.Decide(e.ctx, []*store.Decision{{RunID: "01B", CallID: "call_1", Action: store.Approve, By: "bob", OSUser: "root", Via: "slack"}}, lease); err != nil {
		e.t.Fatal(err)
	}
	all, err := as.Audit(e.ctx, store.AuditFilter{})
	if err != nil || len(all) != 2 || all[0].RunID != "01A" || all[0].Reason != "no" || all[1].By != "bob" || all[1].Via != "slack" ||
		all[0].Agent != "oncall" || all[0].Tool != "restart" || all[0].RootID == "" {
		e.t.Fatalf("Audit: %+v, %v", all, err)
	}
	later, err := as.Audit(e.ctx, store.AuditFilter{Since: t0.Add(time.Minute)})
	if err != nil || len(later) != 1 || later[0].RunID != "01B" {
		e.e("Audit since: %+v, %v", later, err)
	}
	earlier, err := as.Audit(e.ctx, store.AuditFilter{Until: t0.Add(time.Minute)})
	if err != nil || len(earlier) != 1 || earlier[0].RunID != "01A" {
		e.e("Audit until: %+v, %v", earlier, err)
	}
	if none, err := as.Audit(e.ctx, store.AuditFilter{Agent: "other"}); err != nil || len(none) != 0 {
		e.e("Audit of another agent: %+v, %v", none, err)
	}
}

// testFeedAt: a reader that starts after FeedAt(t) gets the events
// stamped at or after t, from the first of them; after every event's
// time, it starts at the end and gets the next event written.
func testFeedAt(e *env) {
	s := server(e)
	r := newRun(e, s, "01A", lease)
	t0 := e.clock.now()
	for i := range 3 {
		for j := range 2 {
			ev := store.Event{RunID: r.ID, Type: "step", Data: []byte(fmt.Sprintf(`{"t":%d,"n":%d}`, i, j))}
			if err := s.Checkpoint(e.ctx, lease, r, nil, ev); err != nil {
				e.t.Fatal(err)
			}
		}
		e.clock.add(time.Second)
	}
	from := func(t time.Time) string {
		e.t.Helper()
		c, err := s.FeedAt(e.ctx, t)
		if err != nil {
			e.t.Fatal(err)
		}
		evs, err := s.Feed(e.ctx, c, store.FeedFilter{})
		if err != nil {
			e.t.Fatal(err)
		}
		var got []string
		for _, ev := range evs {
			got = append(got, string(ev.Data))
		}
		return strings.Join(got, " ")
	}
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{t0.Add(-time.Hour), `{"t":0,"n":0} {"t":0,"n":1} {"t":1,"n":0} {"t":1,"n":1} {"t":2,"n":0} {"t":2,"n":1}`},
		{t0.Add(time.Second), `{"t":1,"n":0} {"t":1,"n":1} {"t":2,"n":0} {"t":2,"n":1}`},
		{t0.Add(1500 * time.Millisecond), `{"t":2,"n":0} {"t":2,"n":1}`},
		{t0.Add(time.Hour), ``},
	} {
		if got := from(tc.at); got != tc.want {
			e.e("feed from %s:\n got %s\nwant %s", tc.at.Sub(t0), got, tc.want)
		}
	}
	end, err := s.FeedAt(e.ctx, t0.Add(time.Hour))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := s.Checkpoint(e.ctx, lease, r, nil, store.Event{RunID: r.ID, Type: "late", Data: []byte(`{}`)}); err != nil {
		e.t.Fatal(err)
	}
	if evs, err := s.Feed(e.ctx, end, store.FeedFilter{}); err != nil || len(evs) != 1 || evs[0].Type != "late" {
		e.e("feed from the end, one more written: %v, %v", evs, err)
	}
}
