package engine

import (
	"context"
	"slices"

	"github.com/agentctl/agentctl/engine/store"
)

// tree is a run tree as a command sees it: the root, every run by id,
// and every call of every run.
type tree struct {
	root  *store.Run
	runs  map[string]*store.Run
	order []*store.Run // the root first, then children in creation order
	calls []*store.Call
}

// load reads a run by its full id and its whole tree, as of one moment
// where the store can.
func (e *Engine) load(ctx context.Context, id string) (*store.Run, *tree, error) {
	r, t, _, err := e.read(ctx, id, false)
	return r, t, err
}

// read is load, with the tree's decisions if asked.
func (e *Engine) read(ctx context.Context, id string, decisions bool) (*store.Run, *tree, []*store.Decision, error) {
	tr, err := e.store.ReadTree(ctx, id, decisions)
	if err != nil {
		return nil, nil, nil, err
	}
	t := &tree{root: tr.Runs[0], runs: make(map[string]*store.Run, len(tr.Runs)), order: tr.Runs}
	at := make(map[string]int, len(tr.Runs)) // each run's place in the tree
	for i, r := range tr.Runs {
		t.runs[r.ID], at[r.ID] = r, i
	}
	// The calls in tree order, each run's in its own order.
	t.calls = slices.Clone(tr.Calls)
	slices.SortStableFunc(t.calls, func(a, b *store.Call) int { return at[a.RunID] - at[b.RunID] })
	r := t.runs[id]
	if r == nil {
		return nil, nil, nil, &store.NotFoundError{What: "no run " + id}
	}
	return r, t, tr.Decisions, nil
}

// waiting returns the calls of the tree waiting for a human.
func (t *tree) waiting() []*store.Call {
	var out []*store.Call
	for _, c := range t.calls {
		if waitsForHuman(c) {
			out = append(out, c)
		}
	}
	return out
}

// TreeRun is one run of a tree, as agentctl show --tree prints it.
type TreeRun struct {
	RunView
	Depth      int    `json:"depth"`
	ParentCall string `json:"parentCall,omitempty"`
}

// Tree returns the tree a run belongs to, from its root, each run with
// the calls waiting in its subtree. It only reads.
func (e *Engine) Tree(ctx context.Context, id string) ([]TreeRun, error) {
	_, t, err := e.load(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]TreeRun, 0, len(t.order))
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, r := range t.order {
			if r.ParentID == parent {
				out = append(out, TreeRun{RunView: *e.overdue(t.view(r)), Depth: depth, ParentCall: r.ParentCall})
				walk(r.ID, depth+1)
			}
		}
	}
	walk("", 0)
	return out, nil
}
