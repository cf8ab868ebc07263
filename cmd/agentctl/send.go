package main

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
)

func (a *app) sendCmd() *cobra.Command {
	var (
		m   engine.Message
		out runFlags
	)
	cmd := &cobra.Command{
		Use:   "send RUNID [MESSAGE]",
		Short: "Add a user message to a run's conversation and continue it",
		Long: `Send appends a user message (MESSAGE, else standard input) to a run. A
completed run goes on: the model answers the new message. For a suspended
run whose agent sets autoResume, the model is asked to extract the data a
suspended call waits for (its resumeSchema) from the message; valid data
resumes the call, invalid data leaves the run suspended and says why.
Calls waiting for approval are never approved by a message: use approve.`,
		Example: `  agentctl send 01JD3F "and check the db too"
  agentctl send 01JD3F "the change ticket is CHG-42"`,
		Args: argsCheck(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if len(argv) == 2 {
				m.Text = argv[1]
				if err := a.limits.check("the message", []byte(m.Text)); err != nil {
					return err
				}
			} else {
				text, err := a.readInput("send: no message: pass MESSAGE or pipe it on standard input", a.stdin)
				if err != nil {
					return err
				}
				m.Text = text
			}
			if strings.TrimSpace(m.Text) == "" {
				return usageErr(errors.New("send: no message: pass MESSAGE or pipe it on standard input"))
			}
			ctx := cmd.Context()
			if a.remote != nil {
				return a.remoteAdvance(ctx, argv[0], &out, &m)
			}
			e, id, err := a.engineAndRun(ctx, argv[0], &out)
			if err != nil {
				return err
			}
			m.RunID = id
			m.OSUser = osUser()
			v, err := e.Send(ctx, m)
			if err != nil {
				return err
			}
			return a.finish(&out, v)
		},
	}
	cmd.Flags().StringVar(&m.By, "as", "", "send on behalf of NAME (default: the OS user)")
	out.add(cmd)
	return cmd
}
