package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

const treeSpec = `
version: 1
models:
  lead: {provider: scripted, turns: [{toolCalls: [{tool: helper, args: {task: x}}]}, {text: done}]}
  help: {provider: scripted, turns: [{toolCalls: [{tool: act, args: {}}]}, {text: ok}]}
tools:
  act: {input: {type: object}, output: acted, requireApproval: true}
agents:
  lead: {model: lead, agents: [helper]}
  helper: {description: Helps., model: help, tools: [act]}
`

// TestShortIDInTree: a tree's runs are created in the same millisecond,
// so they share their first 10 characters; each run's short id is unique
// and resolves to it.
func TestShortIDInTree(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	e := New(openDB(t), Config{Now: func() time.Time { return at }})
	v, err := e.Start(ctx, compile(t, treeSpec), StartOptions{Agent: "lead", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Pending) != 1 || v.Pending[0].RunID == v.RunID {
		t.Fatalf("want a child's call pending: %+v", v)
	}
	root, child := v.RunID, v.Pending[0].RunID
	if root[:MinShortID] != child[:MinShortID] {
		t.Fatalf("the clock is fixed, yet %s and %s differ in their first %d characters", root, child, MinShortID)
	}
	var amb *store.AmbiguousError
	if _, err := e.Resolve(ctx, root[:MinShortID]); !errors.As(err, &amb) {
		t.Fatalf("resolve %s: %v, want ambiguous", root[:MinShortID], err)
	}
	for _, id := range []string{root, child} {
		short, err := e.ShortID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(short) <= MinShortID || len(short) >= len(id) || !strings.HasPrefix(id, short) {
			t.Errorf("short id of %s: %s", id, short)
		}
		if got, err := e.Resolve(ctx, short); err != nil || got != id {
			t.Errorf("resolve %s: %s, %v; want %s", short, got, err, id)
		}
		if _, err := e.Resolve(ctx, short[:len(short)-1]); !errors.As(err, &amb) {
			t.Errorf("%s is not the shortest: %s resolves (%v)", short, short[:len(short)-1], err)
		}
	}
}

// resolveCounter counts the store's id lookups.
type resolveCounter struct {
	store.Store
	n int
}

func (c *resolveCounter) ResolveID(ctx context.Context, prefix string) (string, error) {
	c.n++
	return c.Store.ResolveID(ctx, prefix)
}

// A short id costs one lookup for a run alone in its millisecond, and
// two for runs that share it (a tree's): the first lookup's matches tell
// the length, the second checks it. It was five or more (halving).
func TestShortIDLookups(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	c := &resolveCounter{Store: openDB(t)}
	e := New(c, Config{Now: func() time.Time { return at }})
	v, err := e.Start(ctx, compile(t, treeSpec), StartOptions{Agent: "lead", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{v.RunID, v.Pending[0].RunID} {
		c.n = 0
		if _, err := e.ShortID(ctx, id); err != nil || c.n != 2 {
			t.Errorf("short id of %s (a tree's run): %d lookups (%v), want 2", id, c.n, err)
		}
	}
	at = at.Add(time.Second)
	lone, err := e.Start(ctx, compile(t, treeSpec), StartOptions{Agent: "helper", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	c.n = 0
	if short, err := e.ShortID(ctx, lone.RunID); err != nil || c.n != 1 || len(short) != MinShortID {
		t.Errorf("short id of %s (alone): %q, %d lookups (%v), want %d characters in 1", lone.RunID, short, c.n, err, MinShortID)
	}
}

// idSet resolves prefixes among ids as a store does, listing at most
// limit of the matches of an ambiguous prefix.
type idSet struct {
	store.Store
	ids   []string
	limit int
}

func (s *idSet) ResolveID(_ context.Context, prefix string) (string, error) {
	var m []string
	for _, id := range s.ids {
		if strings.HasPrefix(id, prefix) {
			m = append(m, id)
		}
	}
	switch {
	case len(m) == 0:
		return "", &store.NotFoundError{What: "no run"}
	case len(m) == 1:
		return m[0], nil
	}
	return "", &store.AmbiguousError{Prefix: prefix, Matches: m[:min(len(m), s.limit)]}
}

// Whatever ids share a prefix, and however few of them a lookup lists,
// ShortID finds the shortest unique prefix a search of every length
// would.
func TestShortIDShortest(t *testing.T) {
	ctx := context.Background()
	base := "01M8R30HR0W0ECFDCQY35DV9VH"
	var ids []string
	for i := range 40 { // ids sharing 10 to 25 characters with others
		b := []byte(base)
		p := MinShortID + i%16
		b[p] = "ABCDEFGHJK"[i%10]
		ids = append(ids, string(b))
	}
	ids = append(ids, base)
	for _, limit := range []int{2, 3, 5, 100} {
		e := New(&idSet{ids: ids, limit: limit}, Config{})
		for _, id := range ids {
			want := len(id)
			for n := MinShortID; n < len(id); n++ {
				k := 0
				for _, o := range ids {
					if strings.HasPrefix(o, id[:n]) {
						k++
					}
				}
				if k == 1 {
					want = n
					break
				}
			}
			got, err := e.ShortID(ctx, id)
			if err != nil || got != id[:want] {
				t.Errorf("limit %d: short id of %s: %q (%v), want %q", limit, id, got, err, id[:want])
			}
		}
	}
}
