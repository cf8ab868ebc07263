package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/backend"
)

func (a *app) showCmd() *cobra.Command {
	var (
		out   format
		tree  bool
		depth int
	)
	cmd := &cobra.Command{
		Use:   "show RUNID",
		Short: "Show a run: status, pending calls, every tool call and decision",
		Long: `Show prints a run with its call ledger and its audit trail of decisions.
RUNID may be any unique prefix of a run id. A child run (a sub-agent's)
names its root, where every call waiting in the tree is decided. The
calls of the sub-agents below the run follow its own (--depth limits
how many levels); --tree prints the whole tree of runs.`,
		Example: `  agentctl show 01JD3F
  agentctl show 01JD3F -o json | jq '.decisions'
  agentctl show 01JD3F --tree`,
		Args: needsOne("a run id"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			a.dbOpts.ReadOnly = true // reads only read: see docs/architecture.md
			ctx := cmd.Context()
			if a.remote != nil {
				return a.remoteShow(ctx, argv[0], out, tree, depth)
			}
			e, id, err := a.engineAndRun(ctx, argv[0], nil)
			if err != nil {
				return err
			}
			if tree {
				t, err := e.Tree(ctx, id)
				if err != nil {
					return err
				}
				if out == "json" {
					return writeJSON(a.stdout, t)
				}
				return printTree(a, t, func(id string) (*engine.RunDetail, error) { return e.Detail(ctx, id) })
			}
			d, err := e.Detail(ctx, id)
			if err != nil {
				return err
			}
			rd := runReader{tree: e.Tree, detail: e.Detail}
			if out == "json" {
				j, err := withSubAgents(ctx, rd, d, depth)
				if err != nil {
					return err
				}
				return writeJSON(a.stdout, j)
			}
			printDetail(a, d)
			return printSubAgents(ctx, a.stdout, a.hintCmd(), rd, d, depth)
		},
	}
	addFormatFlag(cmd, &out)
	cmd.Flags().BoolVar(&tree, "tree", false, "show the run's tree of child runs (sub-agents) with their statuses and waiting calls")
	cmd.Flags().IntVar(&depth, "depth", -1, "levels of sub-agents whose calls are shown under the run's own (default all; 0: none)")
	return cmd
}

// printTree prints a run tree, one run a line, children indented.
// Under each run, its calls that are done follow, one a line with its
// result (detail reads them; nil: none).
func printTree(a *app, t []engine.TreeRun, detail func(id string) (*engine.RunDetail, error)) error {
	for _, n := range t {
		pad := strings.Repeat("  ", n.Depth)
		fmt.Fprintf(a.stdout, "%s%s  %s  %s", pad, n.RunID, n.Agent, paint(a.stdout, n.Status))
		if n.ParentCall != "" {
			fmt.Fprintf(a.stdout, "  (for %s)", n.ParentCall)
		}
		fmt.Fprintln(a.stdout)
		for _, p := range n.Pending {
			if p.RunID == n.RunID {
				printPending(a.stdout, pad+"  pending  ", p, a.expireHint())
			}
		}
		if detail == nil {
			continue
		}
		d, err := detail(n.RunID)
		if err != nil {
			return err
		}
		for _, c := range d.Calls {
			if c.Status == store.CallPending || c.Gate != nil && c.Gate.Verdict == store.GateDelegation {
				continue // listed above, or a sub-agent's run listed below
			}
			fmt.Fprintf(a.stdout, "%s  call     %s  %s  %s  %s", pad, c.CallID, c.Tool, c.Status, escaped(string(c.Args), false))
			if r := c.ResultText(); r != "" {
				fmt.Fprintf(a.stdout, "  -> %s", oneLine(r, 120))
			}
			fmt.Fprintln(a.stdout)
		}
	}
	return nil
}

func printDetail(a *app, d *engine.RunDetail) {
	w := a.stdout
	fmt.Fprintf(w, "run      %s\n", d.RunID)
	if d.ParentID != "" {
		fmt.Fprintf(w, "root     %s\n", d.RootID)
		fmt.Fprintf(w, "parent   %s\n", d.ParentID)
		fmt.Fprintf(w, "path     %s\n", strings.Join(d.Path, " > "))
	}
	fmt.Fprintf(w, "agent    %s\n", d.Agent)
	fmt.Fprintf(w, "status   %s\n", paint(w, d.Status))
	if d.StartedBy != "" {
		fmt.Fprintf(w, "created  %s by %s\n", stamp(d.CreatedAt), oneLine(d.StartedBy, 200))
	} else {
		fmt.Fprintf(w, "created  %s\n", stamp(d.CreatedAt))
	}
	fmt.Fprintf(w, "updated  %s\n", stamp(d.UpdatedAt))
	if len(d.Labels) > 0 {
		fmt.Fprintf(w, "labels   %s\n", oneLine(labelList(d.Labels), 300))
	}
	if u := d.Upload; u != nil {
		fmt.Fprintf(w, "uploaded by %s, spec %s\n", oneLine(u.By, 200), u.Digest)
	}
	fmt.Fprintf(w, "input    %s\n", indent(d.Input))
	if u := d.Usage; u.ModelCalls > 0 {
		fmt.Fprintf(w, "usage    %d model %s, %d tokens in, %d out\n", u.ModelCalls, plural(u.ModelCalls, "call", "calls"), u.InputTokens, u.OutputTokens)
	}
	if d.Output != "" {
		fmt.Fprintf(w, "output   %s\n", indent(d.Output))
	}
	if d.Error != "" {
		fmt.Fprintf(w, "error    %s\n", indent(d.Error))
	}
	if d.Status == store.Stalled {
		fmt.Fprintf(w, "next     once what failed is fixed: %s continue %s\n", a.hintCmd(), d.RunID)
	}
	if len(d.Pending) > 0 {
		fmt.Fprintln(w, "\npending")
		for _, p := range d.Pending {
			printPending(w, "  ", p, a.expireHint())
			printDeciders(w, p)
			printEscalation(w, p.Escalation)
		}
	}
	if len(d.Calls) > 0 {
		fmt.Fprintln(w, "\ncalls")
		printCalls(w, a.hintCmd(), d.RunID, d.Calls)
	}
	if len(d.Grants) > 0 {
		fmt.Fprintf(w, "\napproved for the rest of the run: %s\n", strings.Join(d.Grants, ", "))
	}
	printDecisions(w, d)
}

// printCalls prints the calls of run runID, each with its gate, result
// and what to do when it was interrupted (hint: agentctl, with the
// --server or --db the command was given).
func printCalls(w io.Writer, hint, runID string, calls []engine.CallView) {
	for _, c := range calls {
		fmt.Fprintf(w, "  %s  %s  %s  %s\n", c.CallID, c.Tool, c.Status, escaped(string(c.Args), false))
		switch {
		case c.Gate != nil && c.Gate.Verdict == store.GateDelegation && len(c.Gate.Reasons) == 1:
			// Not an approval: the sub-agent's own calls pass their gates.
			fmt.Fprintf(w, "      delegated: to sub-agent %s, whose calls each pass their own approval gate\n", c.Gate.Reasons[0].Detail)
		case c.Gate != nil:
			fmt.Fprintf(w, "      approval: %s\n", c.Gate.Phrase())
		}
		printRules(w, "      ", c.Gate)
		if c.GateError != "" {
			fmt.Fprintf(w, "      requireApproval failed: %s\n", c.GateError)
		}
		if len(c.Resume) > 0 {
			fmt.Fprintf(w, "      resumed with: %s\n", c.Resume)
		}
		printTook(w, c)
		printResult(w, c.Result, c.ResultText())
		if c.Status == store.CallInterrupted {
			fmt.Fprintf(w, "      next: it may or may not have taken effect; %[1]s retry %[2]s --call %[3]s runs it again, %[1]s resolve %[2]s --call %[3]s --output \"...\" records what you found\n",
				hint, runID, c.CallID)
		}
	}
}

// printDecisions prints the decisions of a run and its subtree.
func printDecisions(w io.Writer, d *engine.RunDetail) {
	if len(d.Decisions) == 0 {
		return
	}
	fmt.Fprintln(w, "\ndecisions")
	for _, x := range d.Decisions {
		by := oneLine(x.By, 200)
		switch {
		case x.OSUser == x.By:
		case x.Via != "": // a server's principal, who need not be an OS user
			by += " (as " + oneLine(x.OSUser, 200) + ", by " + x.Via + ")"
		default:
			by += " (as OS user " + oneLine(x.OSUser, 200) + ")"
		}
		fmt.Fprintf(w, "  %s  %s  %s  by %s", stamp(x.At), x.Action, x.CallID, by)
		if x.Reason != "" {
			fmt.Fprintf(w, "  reason: %s", oneLine(x.Reason, 200))
		}
		if x.RunID != d.RunID {
			fmt.Fprintf(w, "  in %s (run %s)", strings.Join(x.Path, " > "), x.RunID)
		}
		fmt.Fprintln(w)
		if len(x.ArgsAfter) > 0 {
			fmt.Fprintf(w, "      args: %s -> %s\n", escaped(string(x.ArgsBefore), false), escaped(string(x.ArgsAfter), false))
		}
		if len(x.Data) > 0 {
			fmt.Fprintf(w, "      data: %s\n", x.Data)
		}
	}
}

// printTook prints how long a call's tool ran, from when; one that
// started but has no end on record says so.
func printTook(w io.Writer, c engine.CallView) {
	switch {
	case c.StartedAt == nil:
	case c.Duration == nil:
		fmt.Fprintf(w, "      ran: from %s, its end unknown\n", stamp(*c.StartedAt))
	default:
		fmt.Fprintf(w, "      ran: %s, from %s\n", took(time.Duration(*c.Duration*float64(time.Second))), stamp(*c.StartedAt))
	}
}

// took writes a duration for people: 340ms, 1.2s, 2m3s, 1h2m3s.
func took(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// age writes how long ago t was, in its largest whole unit: 42s, 5m,
// 3h, 12d.
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// printResult prints a call's result (raw, as stored, and r, its text): on its line when it is one line,
// else as an indented block, its spaces and lines unchanged; an object
// (exec's) with a field of several lines, one field a line, that field
// as a block. Control characters are escaped either way.
func printResult(w io.Writer, raw json.RawMessage, r string) {
	if r == "" {
		return
	}
	var fields []field
	ok := false
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && trimmed[0] == '{' {
		fields, ok = objectFields(r)
	}
	switch {
	case !ok && !multiline(r):
		fmt.Fprintf(w, "      result: %s\n", oneLine(r, 200))
		return
	case !ok:
		fmt.Fprintln(w, "      result:")
		printBlock(w, "        ", r)
		return
	}
	fmt.Fprintln(w, "      result:")
	for _, f := range fields {
		var text string
		if json.Unmarshal(f.value, &text) == nil && multiline(text) {
			fmt.Fprintf(w, "        %s:\n", escaped(f.key, false))
			printBlock(w, "          ", text)
			continue
		}
		fmt.Fprintf(w, "        %s: %s\n", escaped(f.key, false), escaped(string(f.value), false))
	}
}

// multiline reports whether s holds several lines, a last newline aside.
func multiline(s string) bool { return strings.Contains(strings.TrimRight(s, "\n"), "\n") }

// printBlock prints the lines of s, each after pad, as they are but for
// their control characters.
func printBlock(w io.Writer, pad, s string) {
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		fmt.Fprintf(w, "%s%s\n", pad, escaped(line, true))
	}
}

type field struct {
	key   string
	value json.RawMessage
}

// objectFields returns the fields of a JSON object, in order; false when
// s is not one, or one of its string fields holds no line break.
func objectFields(s string) ([]field, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var out []field
	found := false
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		var text string
		found = found || json.Unmarshal(v, &text) == nil && multiline(text)
		out = append(out, field{key, v})
	}
	return out, found
}

// indent aligns continuation lines under the first.
func indent(s string) string {
	return strings.ReplaceAll(escaped(strings.TrimRight(s, "\n"), true), "\n", "\n         ")
}

// engineAndRun opens an engine as flags ask (nil: the defaults) and
// resolves a run id prefix.
func (a *app) engineAndRun(ctx context.Context, prefix string, flags *runFlags) (*engine.Engine, string, error) {
	if flags == nil {
		flags = &runFlags{}
	}
	e, err := a.engineFor(ctx, flags)
	if err != nil {
		return nil, "", err
	}
	id, err := resolveRun(ctx, e, prefix)
	if errors.Is(err, store.ErrNotFound) {
		// A read of a database that is not there reads it as empty: say
		// so, rather than blame the run id alone (a typo in --db).
		// Else name the database searched: a second terminal without
		// $AGENTCTL_DB reads another one.
		if path, perr := dbPath(a.dbPath); perr == nil && !backend.IsPostgres(path) {
			if _, serr := os.Stat(path); errors.Is(serr, fs.ErrNotExist) {
				err = &store.NotFoundError{What: fmt.Sprintf("%v: no database at %s", err, path)}
			} else {
				err = &store.NotFoundError{What: fmt.Sprintf("%v in database %s%s", err, path, a.dbSource())}
			}
		}
	}
	return e, id, err
}

// resolveRun checks a run id prefix and resolves it to a full id.
func resolveRun(ctx context.Context, e *engine.Engine, prefix string) (string, error) {
	p, err := checkRunID(prefix)
	if err != nil {
		return "", err
	}
	if len(p) == 26 {
		return p, nil // a full id: the command's own lookup reports a missing run
	}
	return e.Resolve(ctx, p)
}

// printDeciders says, under a pending call, who may decide it, when its
// spec names approvers or separateDuties applies.
func printDeciders(w io.Writer, p engine.PendingView) {
	who := p.MayDecide()
	switch {
	case who != "" && p.NotBy != "":
		fmt.Fprintf(w, "    may decide: %s; not %s, who started the run (separateDuties)\n", who, p.NotBy)
	case who != "":
		fmt.Fprintf(w, "    may decide: %s\n", who)
	case p.NotBy != "":
		fmt.Fprintf(w, "    may decide: anyone but %s, who started the run (separateDuties)\n", p.NotBy)
	}
}

// dbSource says where the database path came from when neither --db
// nor $AGENTCTL_DB chose it.
func (a *app) dbSource() string {
	if a.dbPath != "" || os.Getenv("AGENTCTL_DB") != "" {
		return ""
	}
	return " (the default: set --db or AGENTCTL_DB for another)"
}
