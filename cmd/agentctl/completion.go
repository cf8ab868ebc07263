package main

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/backend"
	"github.com/agentctl/agentctl/spec"
)

// completions wires the dynamic completions of agentctl completion's
// scripts: run ids (those waiting for a human first, described by agent
// and tool), pending call ids for --call, agent names from the -f files.
// A deciding command completes only what it accepts: approve the runs
// and calls waiting for approval, resume those waiting for resume data,
// retry and resolve the interrupted ones. Every completion only reads:
// the database is opened read-only, and nothing is created or advanced.
func (a *app) completions(root *cobra.Command) {
	root.CompletionOptions.DisableDefaultCmd = false
	for _, c := range root.Commands() {
		kinds, deciding := decides[c.Name()]
		switch {
		case deciding:
			c.ValidArgsFunction = a.completeRuns(kinds)
			c.RegisterFlagCompletionFunc("call", a.completeCalls(kinds))
		case slices.Contains([]string{"show", "events", "continue", "send"}, c.Name()):
			c.ValidArgsFunction = a.completeRuns(nil)
		case c.Name() == "run" || c.Name() == "graph":
			c.ValidArgsFunction = completeAgents
		}
	}
}

// decides are the deciding commands and the kinds of waiting calls each
// takes.
var decides = map[string][]store.Kind{
	"approve": {store.KindApproval},
	"decline": {store.KindApproval, store.KindSuspend},
	"resume":  {store.KindSuspend},
	"retry":   {store.KindInterrupted},
	"resolve": {store.KindInterrupted},
}

// readOnly opens the command's database to read, nil when it cannot.
func (a *app) readOnly(ctx context.Context) *engine.Engine {
	db, err := openDB(ctx, a.dbPath, backend.Options{ReadOnly: true})
	if err != nil {
		return nil
	}
	a.db = db // closed with the app
	return engine.New(db, engine.Config{})
}

// completeRuns completes a run id: the runs waiting for a human first,
// newest first, each described by its agent and the tools it waits on;
// with kinds, only those with a call waiting for one of them; without,
// then the newest others with their status.
func (a *app) completeRuns(kinds []store.Kind) cobra.CompletionFunc {
	waiting := kinds != nil
	return func(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		const dir = cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
		if len(args) > 0 {
			return nil, dir
		}
		ctx := cmd.Context()
		e := a.readOnly(ctx)
		if e == nil {
			return nil, dir
		}
		var out []cobra.Completion
		seen := map[string]bool{}
		sus, _ := e.List(ctx, store.Filter{Status: store.Suspended, Roots: true, Limit: 50})
		for _, r := range sus {
			if !strings.HasPrefix(r.RunID, strings.ToUpper(prefix)) {
				continue
			}
			seen[r.RunID] = true
			var tools []string
			for _, p := range r.Pending {
				if !slices.Contains(tools, p.Tool) && (!waiting || slices.Contains(kinds, p.Kind)) {
					tools = append(tools, p.Tool)
				}
			}
			if len(tools) == 0 {
				continue
			}
			out = append(out, cobra.CompletionWithDesc(r.RunID, r.Agent+": waits on "+strings.Join(tools, ", ")))
		}
		if waiting {
			return out, dir
		}
		recent, _ := e.List(ctx, store.Filter{Roots: true, Limit: 50})
		for _, r := range recent {
			if !seen[r.RunID] && strings.HasPrefix(r.RunID, strings.ToUpper(prefix)) {
				out = append(out, cobra.CompletionWithDesc(r.RunID, r.Agent+": "+string(r.Status)))
			}
		}
		return out, dir
	}
}

// completeCalls completes --call with the calls the run (args[0]) waits
// on, across its tree, for one of kinds.
func (a *app) completeCalls(kinds []store.Kind) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return a.calls(cmd, args, prefix, kinds)
	}
}

func (a *app) calls(cmd *cobra.Command, args []string, prefix string, kinds []store.Kind) ([]cobra.Completion, cobra.ShellCompDirective) {
	const dir = cobra.ShellCompDirectiveNoFileComp
	if len(args) == 0 {
		return nil, dir
	}
	ctx := cmd.Context()
	e := a.readOnly(ctx)
	if e == nil {
		return nil, dir
	}
	id, err := e.Resolve(ctx, args[0])
	if err != nil {
		return nil, dir
	}
	v, err := e.Inspect(ctx, id)
	if err != nil {
		return nil, dir
	}
	var out []cobra.Completion
	for _, p := range v.Pending {
		if strings.HasPrefix(p.CallID, prefix) && slices.Contains(kinds, p.Kind) {
			out = append(out, cobra.CompletionWithDesc(p.CallID, p.Tool+" ("+string(p.Kind)+")"))
		}
	}
	return out, dir
}

// completeAgents completes the agent of run or graph with the agents of
// its -f files.
func completeAgents(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	const dir = cobra.ShellCompDirectiveNoFileComp
	files, _ := cmd.Flags().GetStringArray("file")
	if len(args) > 0 || len(files) == 0 {
		return nil, dir
	}
	s, err := spec.LoadFiles(files...)
	if err != nil {
		return nil, dir
	}
	var out []cobra.Completion
	for name := range s.Agents {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, dir
}
