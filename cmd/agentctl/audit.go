package main

import (
	"encoding/csv"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/internal/duration"
)

const auditHelp = `Export the decisions made across runs: who approved, declined,
resumed, retried, resolved or was refused what, when, how they were
identified (via: the CLI on the database, or the server's socket,
token, proxy or slack), with the run's agent and the call's tool, in the
order they were made. It only reads the database (or asks the server).
The decisions of runs agentctl prune --keep-audit deleted come from
their tombstones, in time order with the others.

--agent NAME takes the decisions in the runs of NAME and in the runs
below them: a supervisor's sub-agents', at any depth, each with its
path (dbops > pg); --root-only keeps to the runs of NAME itself.

--since and --until take a time (RFC 3339, or a date: 2026-11-01) or a
duration back from now (30d, 12h); --until is exclusive. -o csv writes
one row per decision with a header, for a spreadsheet or an auditor's
tool; -o json an array of objects. Both have the same fields, each in
every row (via is cli for a decision made on the database); the text
table shows them but the root, OS user, edited and resumed.

Examples:
  agentctl audit --since 30d
  agentctl audit --since 2026-11-01 --until 2026-12-01 -o csv > november.csv
  agentctl audit --agent oncall -o json`

func (a *app) auditCmd() *cobra.Command {
	var since, until, agent, out string
	var rootOnly bool
	cmd := remoteOK(&cobra.Command{
		Use:   "audit [--since T] [--until T] [--agent NAME] [-o text|json|csv]",
		Short: "Export the decisions made across runs",
		Long:  auditHelp,
		Args:  argsCheck(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			now := time.Now()
			if rootOnly && agent == "" {
				return usageErr(fmt.Errorf("--root-only: it keeps --agent to the agent's own runs: name one"))
			}
			f := store.AuditFilter{Agent: agent, RootOnly: rootOnly}
			var err error
			if f.Since, err = pointInTime("--since", since, now); err != nil {
				return err
			}
			if f.Until, err = pointInTime("--until", until, now); err != nil {
				return err
			}
			switch out {
			case "text", "json", "csv":
			default:
				return usageErr(fmt.Errorf("-o %q: want text, json or csv", out))
			}
			if a.remote != nil {
				entries, err := a.remote.Audit(cmd.Context(), f)
				if err != nil {
					return a.remoteErr(err, format(out))
				}
				return a.printAudit(out, entries)
			}
			a.dbOpts.ReadOnly = true // reads only read
			db, err := a.store(cmd.Context())
			if err != nil {
				return err
			}
			ds, err := db.Audit(cmd.Context(), f)
			if err != nil {
				return err
			}
			return a.printAudit(out, api.AuditEntries(ds))
		},
	})
	cmd.Flags().StringVar(&since, "since", "", "only decisions made at or after `T` (RFC 3339, a date, or a duration back: 30d)")
	cmd.Flags().StringVar(&until, "until", "", "only decisions made before `T`")
	cmd.Flags().StringVar(&agent, "agent", "", "only decisions in runs of agent `NAME` and in the runs below them (its sub-agents')")
	cmd.Flags().BoolVar(&rootOnly, "root-only", false, "with --agent: only decisions in the agent's own runs, not its sub-agents'")
	cmd.Flags().StringVarP(&out, "output", "o", "text", "output format: text, json or csv")
	// The tamper-evident chain (audit_chain.go, audit_export.go).
	cmd.AddCommand(a.auditVerifyCmd(), a.auditKeygenCmd(), a.auditExportCmd())
	return cmd
}

// pointInTime reads --since or --until: a time, a date, or a duration
// back from now; "" is no bound.
func pointInTime(flag, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, v, time.Local); err == nil {
		return t, nil
	}
	if d, err := duration.Parse(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usageErr(fmt.Errorf("%s %q: want a time (2026-11-01T09:00:00Z), a date (2026-11-01) or a duration back from now (30d, 12h)", flag, v))
}

// printAudit prints decisions as -o out says.
func (a *app) printAudit(out string, entries []api.AuditEntry) error {
	switch out {
	case "json":
		return writeJSON(a.stdout, entries)
	case "csv":
		w := csv.NewWriter(a.stdout)
		w.Write([]string{"at", "run_id", "root_id", "agent", "call_id", "tool", "action", "by", "os_user", "via", "reason", "edited", "resumed", "path"})
		for _, e := range entries {
			w.Write([]string{e.At.Format(time.RFC3339Nano), e.RunID, e.RootID, csvSafe(e.Agent), csvSafe(e.CallID), csvSafe(e.Tool), string(e.Action),
				csvSafe(e.By), csvSafe(e.OSUser), csvSafe(e.Via), csvSafe(e.Reason), fmt.Sprint(e.Edited), fmt.Sprint(e.Resumed), csvSafe(strings.Join(e.Path, " > "))})
		}
		w.Flush()
		return w.Error()
	}
	if len(entries) == 0 {
		fmt.Fprintln(a.stdout, "no decisions")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tRUN\tAGENT\tCALL\tTOOL\tACTION\tBY\tVIA\tREASON")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", stamp(e.At), e.RunID, oneLine(strings.Join(e.Path, " > "), 60), e.CallID,
			oneLine(e.Tool, 40), e.Action, oneLine(e.By, 40), e.Via, oneLine(e.Reason, 60))
	}
	return tw.Flush()
}

// csvSafe keeps a spreadsheet from reading a cell as a formula: a cell
// that starts with =, +, -, @, a tab or a carriage return (OWASP's list),
// or with blanks before one of the first four, gets a leading
// apostrophe.
func csvSafe(s string) string {
	trimmed := strings.TrimLeft(s, " \t\r\n")
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) || trimmed != "" && strings.ContainsRune("=+-@", rune(trimmed[0])) {
		return "'" + s
	}
	return s
}
