package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/internal/textcheck"
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

// hintTo is what a printed hint names: cmd, how the command begins
// (app.hintCmd), and run, the run (a unique prefix of its id); expire
// says what declines an overdue call (app.expireHint).
type hintTo struct{ cmd, run, expire string }

// hintTo names run in the hints this command prints.
func (a *app) hintTo(run string) hintTo { return hintTo{a.hintCmd(), run, a.expireHint()} }

// expireHint says what declines an overdue call, as a command that runs
// where it is printed: expire does not go through a server, whose own
// workers decline it.
func (a *app) expireHint() string {
	if a.remote != nil {
		return "the server's workers decline it"
	}
	return a.hintCmd() + " expire declines it"
}

// printRun prints a run after a command that advanced it, and returns
// the exit its status calls for; its hints begin as to.cmd and name the
// run as to.run.
func printRun(w, errw io.Writer, f format, v *engine.RunView, to hintTo) error {
	if v.Notice != "" {
		fmt.Fprintf(errw, "note: %s\n", v.Notice)
	}
	if f == "json" {
		if err := writeJSON(w, v); err != nil {
			return err
		}
		return statusExit(v.Status)
	}
	fmt.Fprintf(w, "run %s  %s  %s\n", v.RunID, v.Agent, paint(w, v.Status))
	for _, p := range v.Pending {
		printPending(w, "  pending  ", p, to.expire)
	}
	switch v.Status {
	case store.Suspended:
		printHints(w, v, to)
	case store.Completed:
		if v.Output != "" {
			fmt.Fprintln(w, escaped(v.Output, true))
		}
	case store.Failed:
		fmt.Fprintf(w, "error: %s\n", escaped(v.Error, true))
	case store.Stalled:
		fmt.Fprintf(w, "stalled: %s\nthe results so far are kept; once what failed is fixed: %s continue %s\n", v.Error, to.cmd, v.RunID)
	case store.Running:
		fmt.Fprintf(w, "another process is advancing this run; follow it with: %s events %s --follow\n", to.cmd, v.RunID)
	}
	return statusExit(v.Status)
}

// printHints prints, for each kind of wait, the commands that decide it,
// each runnable as printed: --call names the call, and --call ID stands
// for one of several listed above. to names the
// command and the run.
func printHints(w io.Writer, v *engine.RunView, to hintTo) {
	short := to.run
	var approvals, suspended, interrupted []engine.PendingView
	for _, p := range v.Pending {
		switch p.Kind {
		case store.KindSuspend:
			suspended = append(suspended, p)
		case store.KindInterrupted:
			interrupted = append(interrupted, p)
		default:
			approvals = append(approvals, p)
		}
	}
	// target names the calls ps. One
	// call is always named: pasted twice, a hint then finds it decided
	// (exit 4) rather than deciding the call that waits next.
	target := func(ps []engine.PendingView) string {
		if len(ps) == 1 {
			return short + " --call " + ps[0].CallID
		}
		return short + " --call ID"
	}
	if len(approvals) > 0 {
		fmt.Fprintf(w, "approve: %s approve %s      decline: %s decline %s --reason \"...\"\n",
			to.cmd, target(approvals), to.cmd, target(approvals))
	}
	if len(suspended) > 0 {
		data := "{...}"
		if len(suspended) == 1 {
			data = hintData(suspended[0].ResumeSchema)
		}
		fmt.Fprintf(w, "resume: %s resume %s --data '%s'", to.cmd, target(suspended), data)
		if len(approvals) == 0 { // decline takes a suspended call too
			fmt.Fprintf(w, "      decline: %s decline %s --reason \"...\"", to.cmd, target(suspended))
		}
		fmt.Fprintln(w)
	}
	if len(interrupted) > 0 {
		fmt.Fprintf(w, "interrupted (its process stopped): %s retry %s      or: %s resolve %s --output \"...\"\n",
			to.cmd, target(interrupted), to.cmd, target(interrupted))
	}
}

// printPending prints one pending call on a line, then what it shows;
// expire says what declines it once overdue.
func printPending(w io.Writer, prefix string, p engine.PendingView, expire string) {
	fmt.Fprintf(w, "%s%s  %s  %s  %s", prefix, p.CallID, p.Tool, escaped(string(p.Args), false), p.Kind)
	if p.Needed > 1 {
		fmt.Fprintf(w, "  %d of %d approvals", p.Approvals, p.Needed)
	}
	switch {
	case p.Overdue:
		fmt.Fprintf(w, "  overdue since %s (%s)", stamp(*p.Deadline), expire)
	case p.Deadline != nil:
		fmt.Fprintf(w, "  expires %s", stamp(*p.Deadline))
	}
	if len(p.Path) > 1 {
		fmt.Fprintf(w, "  in %s (run %s)", strings.Join(p.Path, " > "), p.RunID)
	}
	fmt.Fprintln(w)
	pad := strings.Repeat(" ", len(prefix)+2)
	if p.Kind == store.KindSuspend {
		fmt.Fprintf(w, "%spayload: %s\n", pad, p.Payload)
		if len(p.ResumeSchema) > 0 {
			fmt.Fprintf(w, "%sresume data must satisfy: %s\n", pad, p.ResumeSchema)
		}
	}
	if p.GateError != "" {
		fmt.Fprintf(w, "%sapproval required because requireApproval failed: %s\n", pad, p.GateError)
	}
	printRules(w, pad, p.Gate)
	printAction(w, pad, p.Action)
	printCallPreview(w, pad, p.Preview, p.PreviewDrift)
}

// runFlags are the flags of the commands that advance a run.
type runFlags struct {
	out            format
	events, stream bool
	record, replay string

	// streamer prints the model's text as it arrives, when it does.
	streamer *textStreamer
}

func (f *runFlags) add(cmd *cobra.Command) {
	addFormatFlag(cmd, &f.out)
	f.addRest(cmd)
}

// addRest adds the flags but -o, for a command whose --output means
// something else.
func (f *runFlags) addRest(cmd *cobra.Command) {
	if f.out == "" {
		f.out = "text"
	}
	cmd.Flags().BoolVar(&f.events, "events", false, "write the run's events to stdout as JSON lines while it advances, instead of the result")
	cmd.Flags().BoolVar(&f.stream, "stream", false, "print the model's text as it arrives (the default when stdout is a terminal)")
	cmd.Flags().StringVar(&f.record, "record", "", "append every model request and response to the cassette `FILE`")
	cmd.Flags().StringVar(&f.replay, "replay", "", "answer every model call from the cassette `FILE`: no network; a request not recorded fails the run")
}

// engineFor returns an engine that streams events when --events is set
// and records or replays model calls as asked.
func (a *app) engineFor(ctx context.Context, f *runFlags) (*engine.Engine, error) {
	if f.record != "" && f.replay != "" {
		return nil, usageErr(errors.New("--record and --replay exclude each other"))
	}
	db, err := a.store(ctx)
	if err != nil {
		return nil, err
	}
	path, err := dbPath(a.dbPath)
	if err != nil {
		return nil, err
	}
	ds, err := delegates(path, a.stderr)
	if err != nil {
		return nil, err
	}
	cfg, err := a.traced(ctx, engine.Config{Models: model.Default(), Delegates: ds, Limits: a.limits.engineLimits(), Stop: a.stop})
	if err != nil {
		return nil, err
	}
	switch {
	case f.events:
		cfg.OnEvent = func(ev store.Event) { fmt.Fprintf(a.stdout, "%s\n", ev.JSON()) }
	case f.out == "text" && (f.stream || isTerminal(a.stdout)):
		f.streamer = &textStreamer{w: a.stdout}
		cfg.OnEvent = f.streamer.event
	}
	cfg.Busy = a.spinner(cfg.OnEvent != nil)
	switch {
	case f.record != "":
		cfg.Record = f.record
	case f.replay != "":
		if _, err := os.Stat(f.replay); err != nil {
			return nil, inputErr(fmt.Errorf("--replay: %w", err))
		}
		cfg.Models, cfg.Replay = cfg.Models.Replaying(f.replay), f.replay
	}
	e := engine.New(db, cfg)
	a.addEngine(e)
	return e, nil
}

// finish prints a run as the flags ask and returns the exit its status
// calls for.
func (a *app) finish(f *runFlags, v *engine.RunView) error {
	if f.events {
		if v.Notice != "" {
			fmt.Fprintf(a.stderr, "note: %s\n", v.Notice)
		}
		return statusExit(v.Status)
	}
	if f.streamer != nil && f.streamer.printed && v.Status == store.Completed {
		v2 := *v
		v2.Output = "" // printed as it arrived
		return printRun(a.stdout, a.stderr, f.out, &v2, a.hintTo(v.RunID))
	}
	short := v.RunID
	if f.out == "text" && v.Status == store.Suspended && len(a.engines) > 0 {
		// The hints name the run by its short id (unique, see
		// engine.ShortID); the full id where it cannot be read.
		if s, err := a.engines[len(a.engines)-1].ShortID(context.Background(), v.RunID); err == nil {
			short = s
		}
	}
	return printRun(a.stdout, a.stderr, f.out, v, a.hintTo(short))
}

// textStreamer prints the text of text-delta events as it arrives, and
// ends the line when a model turn ends.
type textStreamer struct {
	w       io.Writer
	open    bool // a line of text is not yet ended
	printed bool // some text was printed
}

func (t *textStreamer) event(ev store.Event) {
	switch ev.Type {
	case engine.EventTextDelta:
		var d struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(ev.Data, &d) == nil && d.Text != "" {
			io.WriteString(t.w, d.Text)
			t.open, t.printed = !strings.HasSuffix(d.Text, "\n"), true
		}
	case engine.EventStepFinish, engine.EventError:
		if t.open {
			io.WriteString(t.w, "\n")
			t.open = false
		}
	}
}

// statusExit maps a run's status to the command's exit.
func statusExit(s store.Status) error {
	switch s {
	case store.Suspended:
		return &exitErr{code: exitSuspended}
	case store.Failed:
		return &exitErr{code: exitError}
	case store.Stalled:
		return &exitErr{code: exitStalled}
	}
	return nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// oneLine shortens text for a table cell: one line, control and
// format characters escaped (see escaped), at most max bytes.
func oneLine(s string, max int) string {
	s = escaped(strings.Join(strings.Fields(s), " "), false)
	if len(s) > max {
		cut := max - 1
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// escaped writes the control characters of s (but newlines and tabs
// when lines is set) and its invisible format characters (bidi
// overrides, zero widths, line separators) as Go escapes (\x1b,
// \u202e): text a run stored (its input, a model's output, a reason)
// can then neither drive the terminal nor forge or hide a line of what
// agentctl prints.
func escaped(s string, lines bool) string {
	bad := func(r rune) bool {
		if lines && (r == '\n' || r == '\t') {
			return false
		}
		return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
	}
	if strings.IndexFunc(s, bad) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if bad(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// checkJSON refuses what is not JSON before any run is looked up.
func checkJSON(what string, b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return inputErr(fmt.Errorf("%s is not JSON: %v (at byte %d)", what, se, se.Offset))
		}
		return inputErr(fmt.Errorf("%s is not JSON: %v", what, err))
	}
	if e := textcheck.JSON(b); e != nil {
		at := ""
		if e.Pointer != "" {
			at = " (" + e.Pointer + ")"
		}
		return inputErr(fmt.Errorf("%s: %v%s: agentctl takes UTF-8 text; nothing was stored", what, e, at))
	}
	return nil
}

// addDecisionFlags adds the audit flags every decision takes; only a
// decline's reason is told to the model (engine.declined).
func addDecisionFlags(cmd *cobra.Command, d *engine.Decision) {
	cmd.Flags().StringVar(&d.By, "as", "", "record the decision on behalf of NAME (default: the OS user)")
	reason := "why; kept in the audit trail (the model is not told)"
	switch d.Action {
	case store.Decline:
		reason = "why; kept in the audit trail and told to the model"
	case store.Resume:
		reason = "why; kept in the audit trail with the resume data (the model is not told)"
	}
	switch d.Action {
	case store.Approve, store.Decline, store.Resume:
		reason += "; required where the call's tool says requireReason"
	}
	cmd.Flags().StringVar(&d.Reason, "reason", "", reason)
	cmd.Flags().BoolVar(&d.Detach, "detach", false, "record the decision and return (exit 0): a worker advances the run (agentctl worker)")
}

// decide resolves the run id and carries out a decision.
func (a *app) decide(cmd *cobra.Command, runID string, out *runFlags, d engine.Decision) error {
	if err := a.limits.check("--reason", []byte(d.Reason)); err != nil {
		return err
	}
	ctx := cmd.Context()
	if a.remote != nil {
		return a.remoteDecide(ctx, runID, out, d)
	}
	e, id, err := a.engineAndRun(ctx, runID, out)
	if err != nil {
		return err
	}
	d.RunID, d.OSUser = id, osUser()
	v, err := e.Decide(ctx, d)
	if err != nil {
		return err
	}
	if d.Detach {
		return a.detached(out, v, "decision recorded; a worker advances the run")
	}
	return a.finish(out, v)
}

// detached prints a run a detached command left for a worker; it exits
// 0 whatever the run's status.
func (a *app) detached(f *runFlags, v *engine.RunView, note string) error {
	a.warnNoWorker(v)
	if f.out == "json" {
		return writeJSON(a.stdout, v)
	}
	fmt.Fprintf(a.stdout, "run %s  %s  %s\n%s\n", v.RunID, v.Agent, v.Status, note)
	return nil
}
