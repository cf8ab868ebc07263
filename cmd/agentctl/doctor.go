package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store/backend"
	"github.com/agentctl/agentctl/engine/store/sqlstore"
)

const doctorHelp = `Check the database without changing it: SQLite's integrity_check and
foreign keys, the schema version, the consistency of runs and calls, and
what waits for a human (runs a stopped process left running, whether its
lease has run out or its holder is provably dead, calls a crash
interrupted, approvals past their deadline), with the command that deals
with each. It only reads, so it works on a database it may not write (a
read-only file, directory or mount, a PostgreSQL role that may only
SELECT).

Exits 0 when nothing is damaged (warnings included), 1 when a check finds
damage, 6 when the database cannot be opened at all.

Examples:
  agentctl doctor
  agentctl doctor --db /var/lib/agentctl/agentctl.db -o json`

func (a *app) doctorCmd() *cobra.Command {
	var out format
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the database and report",
		Long:  doctorHelp,
		Args:  argsCheck(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := openDB(cmd.Context(), a.dbPath, backend.Options{Inspect: true})
			if err != nil {
				return fmt.Errorf("doctor: %w", err)
			}
			defer db.Close()
			r, err := db.Doctor(cmd.Context(), sqlstore.DoctorOptions{Dead: engine.HolderDead})
			if err != nil {
				return fmt.Errorf("doctor %s: %w", db.Path(), err)
			}
			addFixes(r)
			if out == "json" {
				if err := writeJSON(a.stdout, r); err != nil {
					return err
				}
			} else {
				printReport(a, r)
			}
			if !r.OK() {
				return &exitErr{code: exitError}
			}
			return nil
		},
	}
	addFormatFlag(cmd, &out)
	return cmd
}

func printReport(a *app, r *sqlstore.Report) {
	if r.Backend == "sqlite" {
		fmt.Fprintf(a.stdout, "database  %s (%d bytes, schema %d of %d, journal %s)\n", r.Path, r.Bytes, r.Schema, r.Known, r.Journal)
	} else {
		fmt.Fprintf(a.stdout, "database  %s (%s, schema %d of %d)\n", r.Path, r.Backend, r.Schema, r.Known)
	}
	if len(r.Runs) > 0 {
		var parts []string
		for _, st := range slices.Sorted(maps.Keys(r.Runs)) {
			parts = append(parts, fmt.Sprintf("%s %d", st, r.Runs[st]))
		}
		fmt.Fprintf(a.stdout, "runs      %s\n", strings.Join(parts, ", "))
	}
	for _, f := range r.Findings {
		line := f.Check
		if f.Detail != "" {
			line += ": " + f.Detail
		}
		if f.Fix != "" {
			line += ": " + f.Fix
		}
		fmt.Fprintf(a.stdout, "%-5s     %s\n", f.Status, line)
		for _, id := range f.Runs {
			fmt.Fprintf(a.stdout, "            %s\n", id)
		}
	}
	problems := 0
	for _, f := range r.Findings {
		if f.Status == sqlstore.FindingError {
			problems++
		}
	}
	if problems > 0 {
		fmt.Fprintf(a.stdout, "%d %s found damage\n", problems, plural(problems, "check", "checks"))
	}
}
