package engine

import (
	"context"

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

// load reads a run by its full id and its whole tree: a root's in one
// read of the runs, a child's in two (its own row names the root).
func (e *Engine) load(ctx context.Context, id string) (*store.Run, *tree, error) {
	runs, err := e.store.Tree(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if len(runs) == 0 {
		return nil, nil, &store.NotFoundError{What: "no run " + id}
	}
	if root := runs[0].RootID; root != id {
		t, err := e.loadTree(ctx, root)
		if err != nil {
			return nil, nil, err
		}
		if r := t.runs[id]; r != nil {
			return r, t, nil
		}
		return nil, nil, &store.NotFoundError{What: "no run " + id}
	}
	t, err := e.treeOf(ctx, runs)
	if err != nil {
		return nil, nil, err
	}
	return t.root, t, nil
}

// loadTree reads the tree rooted at rootID.
func (e *Engine) loadTree(ctx context.Context, rootID string) (*tree, error) {
	runs, err := e.store.Tree(ctx, rootID)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, &store.NotFoundError{What: "no run " + rootID}
	}
	return e.treeOf(ctx, runs)
}

// treeOf reads the calls of a tree's runs, the root first.
func (e *Engine) treeOf(ctx context.Context, runs []*store.Run) (*tree, error) {
	t := &tree{root: runs[0], runs: make(map[string]*store.Run, len(runs)), order: runs}
	for _, r := range runs {
		t.runs[r.ID] = r
		calls, err := e.store.Calls(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		t.calls = append(t.calls, calls...)
	}
	return t, nil
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
