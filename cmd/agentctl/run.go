package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine"
)

func (a *app) runCmd() *cobra.Command {
	var (
		files                   []string
		input                   string
		labels                  []string
		requireApproval, detach bool
		interactive             bool
		modelName               string
		out                     runFlags
	)
	cmd := &cobra.Command{
		Use:   "run AGENT -f FILE|DIR... [--input TEXT]",
		Short: "Start a run of an agent",
		Long: `Run starts a run of AGENT from the spec in the -f files and advances it
until it completes (exit 0), fails (exit 1) or waits for a human decision
(exit 3). The input is --input, else standard input. The run keeps a
snapshot of the spec: editing the files later does not change it.

Through a server (--server), -f is optional: without it the server runs
its own spec of AGENT (its configuration's specs); with it, the one spec
file it names is sent with the run, which only the server's authors may
do (a spec's exec tools run on the server's host).`,
		Example: `  agentctl run oncall -f examples/agents/oncall.yaml --input "nginx is down in prod"
  echo "disk full on db-1" | agentctl run oncall -f examples/agents/ -o json
  agentctl run oncall -f examples/agents/ --require-approval --input "check nginx"
  agentctl run oncall -f examples/agents/ -i --input "nginx is down in prod"`,
		Args: runArgs,
		RunE: func(cmd *cobra.Command, argv []string) error {
			if interactive {
				if err := a.checkInteractive("run", &out, detach); err != nil {
					return err
				}
			}
			if len(files) == 0 && a.remote == nil {
				return usageErr(errors.New("run: no spec: pass -f FILE or -f DIR"))
			}
			if !cmd.Flags().Changed("input") {
				text, err := a.readInput("run: no input: pass --input TEXT or pipe it on standard input", a.stdin)
				if err != nil {
					return err
				}
				input = text
			} else if err := a.limits.check("--input", []byte(input)); err != nil {
				return err
			}
			if detach && out.replay != "" {
				return usageErr(errors.New("run: --replay answers from a cassette in this process, and a worker has none: drop --detach"))
			}
			if strings.TrimSpace(input) == "" {
				return usageErr(errors.New("run: no input: pass --input TEXT or pipe it on standard input"))
			}
			runLabels, err := parseLabels(labels)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if a.remote != nil {
				req := api.StartRequest{Agent: argv[0], Input: input, RequireApproval: requireApproval, Model: modelName, Detach: detach, Labels: runLabels}
				return a.remoteStart(ctx, files, req, &out)
			}
			s, err := a.loadSpec(files)
			if err != nil {
				return err
			}
			e, err := a.engineFor(ctx, &out)
			if err != nil {
				return err
			}
			g, err := e.Compile(s)
			if err != nil {
				return inputErr(err)
			}
			v, err := e.Start(ctx, g, engine.StartOptions{Agent: argv[0], Input: input, RequireApproval: requireApproval, Model: modelName, Detach: detach, StartedBy: osUser(), Labels: runLabels})
			if err == nil && detach {
				return a.detached(&out, v, "queued; a worker runs it (agentctl worker)")
			}
			if err != nil {
				return err
			}
			if interactive {
				return a.interact(ctx, e, &out, v.RunID, engine.Decision{}, v)
			}
			return a.finish(&out, v)
		},
	}
	cmd.Flags().StringArrayVarP(&files, "file", "f", nil, "spec file or directory (repeatable)")
	cmd.Flags().StringVar(&input, "input", "", "the user's message (default: standard input)")
	cmd.Flags().BoolVar(&requireApproval, "require-approval", false, "every tool call of this run waits for a human")
	cmd.Flags().StringArrayVar(&labels, "label", nil, "label the run `KEY=VALUE` (repeatable): policy rules read labels")
	cmd.Flags().StringVar(&modelName, "model", "", "use the spec's model `NAME` instead of the agent's, for this run")
	cmd.Flags().BoolVar(&detach, "detach", false, "queue the run and return (exit 0): a worker runs it (agentctl worker)")
	out.add(cmd)
	addInteractiveFlag(cmd, &interactive)
	return cmd
}

// runArgs requires run's one agent; the input is not an argument, and
// its error says what passes it.
func runArgs(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return cmdUsageErr(cmd, fmt.Errorf("run needs an agent: %s", usageLine(cmd)))
	case len(args) > 1:
		return cmdUsageErr(cmd, fmt.Errorf("run takes one agent, not %d arguments (%s): pass the input with --input TEXT or pipe it on standard input",
			len(args), quoteArgs(args)))
	}
	return nil
}

// readInput reads a command's input from standard input unless it is a
// terminal, up to the input limit; none says what passes the input.
func (a *app) readInput(none string, r io.Reader) (string, error) {
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return "", usageErr(errors.New(none))
		}
	}
	b, err := a.limits.read("standard input", r)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\n"), nil
}
