package main

import (
	"github.com/spf13/cobra"
)

func (a *app) continueCmd() *cobra.Command {
	var out runFlags
	cmd := &cobra.Command{
		Use:   "continue RUNID",
		Short: "Continue a run that a stopped process left running",
		Long: `Continue picks up a run whose process was interrupted (Ctrl-C) or died,
from its last checkpoint: a step in flight is done again, a tool call that
had finished is not. A run held by a process that died becomes free once
its lease (60 s) runs out; an interrupted process frees it at once.`,
		Example: `  agentctl continue 01JD3F`,
		Args:    argsCheck(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			if a.remote != nil {
				return a.remoteAdvance(ctx, argv[0], &out, nil)
			}
			e, id, err := a.engineAndRun(ctx, argv[0], &out)
			if err != nil {
				return err
			}
			v, err := e.Continue(ctx, id)
			if err != nil {
				return err
			}
			return a.finish(&out, v)
		},
	}
	out.add(cmd)
	return cmd
}
