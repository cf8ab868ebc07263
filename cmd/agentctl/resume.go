package main

import (
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

func (a *app) resumeCmd() *cobra.Command {
	var (
		d              = engine.Decision{Action: store.Resume}
		data, dataFile string
		out            runFlags
	)
	cmd := &cobra.Command{
		Use:   "resume RUNID [--call ID] (--data JSON | --data-file FILE|-)",
		Short: "Give a suspended tool call the data it waits for, and continue the run",
		Long: `Resume answers a call whose tool suspended itself (suspend.when) with resume
data: a JSON object checked against the tool's resumeSchema before anything
is written. Data that breaks the schema exits 2, listing each violation as
a JSON pointer and a message, and leaves the run exactly as it was. Valid
data is recorded; the tool's suspend.when is evaluated again with resume
bound, then its action runs with resume available to its placeholders.`,
		Example: `  agentctl resume 01JD3F --data '{"ticket":"CHG-42"}'
  agentctl resume 01JD3F --call call_2 --data-file answer.json
  echo '{"approved":false}' | agentctl resume 01JD3F --data-file -`,
		Args: needsOne("a run id"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			switch {
			case (data == "") == (dataFile == ""):
				return usageErr(errors.New("resume: pass the data with --data JSON or --data-file FILE (- for standard input)"))
			case dataFile == "-":
				b, err := a.limits.read("--data-file -", a.stdin)
				if err != nil {
					return err
				}
				d.Data = b
			case dataFile != "":
				f, err := os.Open(dataFile)
				if err != nil {
					return inputErr(err)
				}
				b, err := a.limits.read("--data-file "+dataFile, f)
				f.Close()
				if err != nil {
					return err
				}
				d.Data = b
			default:
				d.Data = []byte(data)
				if err := a.limits.check("--data", d.Data); err != nil {
					return err
				}
			}
			if err := checkJSON("resume data", d.Data); err != nil {
				return err
			}
			return a.decide(cmd, argv[0], &out, d)
		},
	}
	cmd.Flags().StringVar(&d.CallID, "call", "", "the suspended call (default: the only one)")
	cmd.Flags().StringVar(&data, "data", "", "the resume data, a JSON object")
	cmd.Flags().StringVar(&dataFile, "data-file", "", "read the resume data from FILE (- for standard input)")
	addDecisionFlags(cmd, &d)
	out.add(cmd)
	return cmd
}
