package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/notify"
)

// Notify returns the targets notified of run r under its spec snapshot:
// those of its agent's notify: and of every agent above it in its tree
// (r.Path), each once, the nearest first: a target declared at the root
// hears of every call in the tree. A snapshot none of whose files says
// "notify" is not compiled to find out.
func (e *Engine) Notify(ctx context.Context, r *store.Run) ([]notify.Target, error) {
	if quiet, err := e.quietSpec(ctx, r.SpecHash); err != nil || quiet {
		return nil, err
	}
	g, err := e.graph(ctx, r.SpecHash)
	if err != nil {
		return nil, fmt.Errorf("notify targets of run %s: %w", r.ID, err)
	}
	path := r.Path
	if len(path) == 0 {
		path = []string{r.Agent}
	}
	var out []notify.Target
	seen := map[string]bool{}
	for i := len(path) - 1; i >= 0; i-- {
		a, ok := g.agents[path[i]]
		if !ok {
			continue
		}
		for _, t := range a.spec.Notify {
			if k, _ := json.Marshal(t); !seen[string(k)] {
				seen[string(k)] = true
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// quietSpec reports whether the snapshot hash cannot name a notify
// target: none of its files says "notify".
func (e *Engine) quietSpec(ctx context.Context, hash string) (bool, error) {
	e.mu.Lock()
	quiet, known := e.quiet[hash]
	_, compiled := e.graphs[hash]
	e.mu.Unlock()
	if known || compiled {
		return quiet, nil
	}
	snap, err := e.store.Spec(ctx, hash)
	if err != nil {
		return false, fmt.Errorf("spec snapshot %s: %w", hash, err)
	}
	srcs, _, err := decodeSnapshot(snap)
	if err != nil {
		return false, fmt.Errorf("spec snapshot %s: %w", hash, err)
	}
	quiet = true
	for _, src := range srcs {
		if bytes.Contains(src.Data, []byte("notify")) {
			quiet = false
		}
	}
	e.mu.Lock()
	e.quiet[hash] = quiet
	e.mu.Unlock()
	return quiet, nil
}

// Secrets names the environment variables whose values run r's spec
// hands to its tools and models: what a notification of the run must
// never carry, whatever a model or a tool put in its arguments or
// result.
func (e *Engine) Secrets(ctx context.Context, r *store.Run) ([]string, error) {
	g, err := e.graph(ctx, r.SpecHash)
	if err != nil {
		return nil, fmt.Errorf("secrets of run %s: %w", r.ID, err)
	}
	return slices.Clone(g.secrets), nil
}

// Notifies reports whether a spec this engine has compiled declares a
// notify target: a process whose runs have none need not look for
// notifications to send (another deliverer sends what others queued).
func (e *Engine) Notifies() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, g := range e.graphs {
		for _, a := range g.agents {
			if len(a.spec.Notify) > 0 {
				return true
			}
		}
		if g.escalationNotifies() {
			return true
		}
	}
	return false
}
