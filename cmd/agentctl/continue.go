package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

func (a *app) continueCmd() *cobra.Command {
	var (
		out         runFlags
		interactive bool
	)
	cmd := &cobra.Command{
		Use:   "continue RUNID",
		Short: "Continue a run that a stopped process left running",
		Long: `Continue picks up a run whose process was interrupted (Ctrl-C) or died,
from its last checkpoint: a step in flight is done again, a tool call that
had finished is not. A run held by a process that died becomes free once
its lease (60 s) runs out; an interrupted process frees it at once. With
-i, a run that waits for a human is asked about at once.`,
		Example: `  agentctl continue 01JD3F
  agentctl continue 01JD3F -i`,
		Args: argsCheck(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if interactive {
				if err := a.checkInteractive("continue", &out, false); err != nil {
					return err
				}
			}
			ctx := cmd.Context()
			if a.remote != nil {
				return a.remoteAdvance(ctx, argv[0], &out, nil)
			}
			e, id, err := a.engineAndRun(ctx, argv[0], &out)
			if err != nil {
				return err
			}
			v, err := e.Continue(ctx, id)
			var notReady *engine.NotReadyError
			if interactive && errors.As(err, &notReady) && notReady.Status == store.Suspended {
				v, err = e.Inspect(ctx, id) // nothing to continue: ask about what it waits for
			}
			if err != nil {
				return err
			}
			if interactive {
				return a.interact(ctx, e, &out, id, engine.Decision{}, v)
			}
			return a.finish(&out, v)
		},
	}
	out.add(cmd)
	addInteractiveFlag(cmd, &interactive)
	return cmd
}
