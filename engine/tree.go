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

// loadTree reads the tree rooted at rootID.
func (e *Engine) loadTree(ctx context.Context, rootID string) (*tree, error) {
	runs, err := e.store.Tree(ctx, rootID)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, &store.NotFoundError{What: "no run " + rootID}
	}
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
		if c.Status == store.CallPending && c.Kind != store.KindDelegation {
			out = append(out, c)
		}
	}
	return out
}
