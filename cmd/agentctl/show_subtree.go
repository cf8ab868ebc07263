package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/agentctl/agentctl/engine"
)

// runReader reads a run's tree and a run's detail, from a database or a
// server.
type runReader struct {
	tree   func(ctx context.Context, id string) ([]engine.TreeRun, error)
	detail func(ctx context.Context, id string) (*engine.RunDetail, error)
}

// below returns the runs of tree t under run id, depth first, each
// with its depth below id; at most depth levels (negative: all).
func below(t []engine.TreeRun, id string, depth int) []engine.TreeRun {
	var out []engine.TreeRun
	for i, n := range t {
		if n.RunID != id {
			continue
		}
		for _, m := range t[i+1:] {
			if m.Depth <= n.Depth {
				break
			}
			if m.Depth-n.Depth <= depth || depth < 0 {
				m.Depth -= n.Depth
				out = append(out, m)
			}
		}
	}
	return out
}

// printSubAgents prints, after a run's own calls, those of the runs
// below it (its sub-agents'): the evidence under the call an approver
// decides. depth limits the levels (negative: all, 0: none).
func printSubAgents(ctx context.Context, w io.Writer, hint string, rd runReader, d *engine.RunDetail, depth int) error {
	if depth == 0 {
		return nil
	}
	t, err := rd.tree(ctx, d.RunID)
	if err != nil {
		return err
	}
	runs := below(t, d.RunID, depth)
	if len(runs) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nsub-agents")
	for _, n := range runs {
		cd, err := rd.detail(ctx, n.RunID)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s  run %s  %s", strings.Join(cd.Path, " > "), cd.RunID, paint(w, cd.Status))
		if n.ParentCall != "" {
			fmt.Fprintf(w, "  (for %s)", n.ParentCall)
		}
		fmt.Fprintln(w)
		if cd.Output != "" {
			fmt.Fprintf(w, "    output: %s\n", oneLine(cd.Output, 200))
		}
		printCalls(w, hint, d.RootID, cd.Calls)
	}
	return nil
}

// detailJSON is show -o json: the run, then its sub-agents' runs with
// their calls (subAgents, depth first), as far as --depth reaches.
type detailJSON struct {
	*engine.RunDetail
	SubAgents []subAgentJSON `json:"subAgents,omitempty"`
}

// subAgentJSON is one run below the one shown: its depth below it, and
// the call of its parent it serves.
type subAgentJSON struct {
	Depth      int    `json:"depth"`
	ParentCall string `json:"parentCall,omitempty"`
	*engine.RunDetail
}

// withSubAgents returns d with the details of the runs below it.
func withSubAgents(ctx context.Context, rd runReader, d *engine.RunDetail, depth int) (*detailJSON, error) {
	out := &detailJSON{RunDetail: d}
	if depth == 0 {
		return out, nil
	}
	t, err := rd.tree(ctx, d.RunID)
	if err != nil {
		return nil, err
	}
	for _, n := range below(t, d.RunID, depth) {
		cd, err := rd.detail(ctx, n.RunID)
		if err != nil {
			return nil, err
		}
		out.SubAgents = append(out.SubAgents, subAgentJSON{Depth: n.Depth, ParentCall: n.ParentCall, RunDetail: cd})
	}
	return out, nil
}
