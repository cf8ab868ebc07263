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
// Every completion only reads: the database is opened read-only, and
// nothing is created or advanced.
func (a *app) completions(root *cobra.Command) {
	root.CompletionOptions.DisableDefaultCmd = false
	for _, c := range root.Commands() {
		switch c.Name() {
		case "approve", "decline", "resume", "retry", "resolve":
			c.ValidArgsFunction = a.completeRuns(true)
		case "show", "events", "continue", "send":
			c.ValidArgsFunction = a.completeRuns(false)
		case "run":
			c.ValidArgsFunction = completeAgents
		default:
			continue
		}
		if c.Flags().Lookup("call") != nil {
			c.RegisterFlagCompletionFunc("call", a.completeCalls)
		}
	}
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
// then, unless waiting, the newest others with their status.
func (a *app) completeRuns(waiting bool) cobra.CompletionFunc {
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
				if !slices.Contains(tools, p.Tool) {
					tools = append(tools, p.Tool)
				}
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
// on, across its tree.
func (a *app) completeCalls(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
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
		if strings.HasPrefix(p.CallID, prefix) {
			out = append(out, cobra.CompletionWithDesc(p.CallID, p.Tool+" ("+string(p.Kind)+")"))
		}
	}
	return out, dir
}

// completeAgents completes run's agent with the agents of its -f files.
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
