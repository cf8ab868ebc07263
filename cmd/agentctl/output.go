package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

// format is the -o flag: text for people, json for scripts.
type format string

func (f *format) String() string { return string(*f) }
func (f *format) Type() string   { return "text|json" }
func (f *format) Set(s string) error {
	switch s {
	case "text", "json":
		*f = format(s)
		return nil
	}
	return fmt.Errorf("want text or json, not %q", s)
}

func addFormatFlag(cmd *cobra.Command, f *format) {
	*f = "text"
	cmd.Flags().VarP(f, "output", "o", "output format: text or json")
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// printRun prints a run after run, approve or decline, and returns the
// exit code its status calls for.
func printRun(w io.Writer, f format, v *engine.RunView) error {
	if f == "json" {
		if err := writeJSON(w, v); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "run %s  %s  %s\n", v.RunID, v.Agent, v.Status)
		for _, p := range v.Pending {
			fmt.Fprintf(w, "  pending  %s  %s  %s  %s\n", p.CallID, p.Tool, p.Args, p.Kind)
		}
		switch v.Status {
		case store.Suspended:
			call := ""
			if len(v.Pending) > 1 {
				call = " --call ID"
			}
			fmt.Fprintf(w, "approve: agentctl approve %s%s      decline: agentctl decline %s%s --reason \"...\"\n",
				v.RunID, call, v.RunID, call)
		case store.Completed:
			fmt.Fprintln(w, v.Output)
		case store.Failed:
			fmt.Fprintf(w, "error: %s\n", v.Error)
		case store.Running:
			fmt.Fprintln(w, "another process is advancing this run; follow it with: agentctl show", v.RunID)
		}
	}
	return statusExit(v.Status)
}

// statusExit maps a run's status to the command's exit.
func statusExit(s store.Status) error {
	switch s {
	case store.Suspended:
		return &exitErr{code: exitSuspended}
	case store.Failed:
		return &exitErr{code: exitError}
	}
	return nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// oneLine shortens text for a table cell.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max-1] + "…"
	}
	return s
}
