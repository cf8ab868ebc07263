package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/toolkits"
)

// remoteHelp is what the commands that speak to a server add to their
// help.
const remoteHelp = `

With --server URL|unix:PATH (or $AGENTCTL_SERVER, with $AGENTCTL_TOKEN
over http(s)) the command goes through agentctl serve, which owns the
database and enforces who may do what: it prints the same text and JSON
and exits with the same codes, an error of the server's included (under
-o json its error object is printed on stderr). --record, --replay and
--events work in this process only and are refused; --stream is ignored
(the run is printed when it rests).`

// remoteAnnotation marks the commands that work against a server.
const remoteAnnotation = "agentctl/remote"

// remoteOK marks cmd as one that works against a server, and adds so to
// its help.
func remoteOK(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[remoteAnnotation] = "yes"
	cmd.Long += remoteHelp
	return cmd
}

// connect decides, before a command runs, whether it goes through a
// server: --server, else $AGENTCTL_SERVER unless --db is given (a flag
// beats the environment). --server and --db exclude each other, and
// --server on a command that does not go through a server is refused;
// with $AGENTCTL_SERVER set, such a command (worker, doctor, serve, ...)
// uses the database as before.
func (a *app) connect(cmd *cobra.Command) error {
	flag := cmd.Flags().Changed("server")
	switch {
	case flag:
		a.hintFlags = " --server " + toolkits.ShellQuote(a.server)
	case cmd.Flags().Changed("db"):
		a.hintFlags = " --db " + toolkits.ShellQuote(a.dbPath)
	}
	if flag && cmd.Flags().Changed("db") {
		return usageErr(errors.New("--server and --db exclude each other: a server owns its database"))
	}
	server := a.server
	if !flag && !cmd.Flags().Changed("db") {
		server = os.Getenv("AGENTCTL_SERVER")
	}
	if server == "" {
		return nil
	}
	if cmd.Annotations[remoteAnnotation] == "" {
		// help (and agentctl alone, which prints it) reads nothing.
		if flag && cmd.HasParent() && cmd.Name() != "help" {
			return usageErr(fmt.Errorf("%s does not go through a server: drop --server, and run it where the database is (--db or $AGENTCTL_DB)", cmd.CommandPath()))
		}
		return nil
	}
	c, err := client.New(server, os.Getenv("AGENTCTL_TOKEN"))
	switch {
	case err != nil && !flag:
		return inputErr(fmt.Errorf("AGENTCTL_SERVER: %w", err))
	case err != nil:
		return usageErr(err)
	}
	a.remote = c
	return nil
}

// hintCmd is how the commands this one prints as hints begin: agentctl
// and the --server or --db given on its command line, so that each runs
// as printed where it was printed (what the environment names, the
// command printed finds there too).
func (a *app) hintCmd() string { return "agentctl" + a.hintFlags }

// remoteErr prints an error of the server (or of reaching it) as the
// command's errors print, its error object on stderr under -o json, and
// exits with its code; other errors go on.
func (a *app) remoteErr(err error, f format) error {
	var (
		obj  api.Error
		code int
		ae   *client.Error
		ue   *client.UnreachableError
		oe   *client.UnknownOutcomeError
	)
	switch {
	case errors.As(err, &oe):
		obj, code = oe.Object(), oe.ExitCode()
	case errors.As(err, &ae):
		obj, code = ae.API, ae.ExitCode()
	case errors.As(err, &ue):
		obj, code = ue.Object(), ue.ExitCode()
	default:
		return err
	}
	if f == "json" {
		writeJSON(a.stderr, api.ErrorBody{Error: obj})
		return &exitErr{code: code}
	}
	if ae != nil && len(ae.Ambiguous()) > 0 {
		// As an ambiguous prefix is reported against a database.
		fmt.Fprintf(a.stderr, "agentctl: %s; use a longer prefix. Matches:\n", obj.Message)
		for _, m := range ae.Ambiguous() {
			fmt.Fprintf(a.stderr, "  %s\n", m)
		}
		return &exitErr{code: code}
	}
	fmt.Fprintf(a.stderr, "agentctl: %s\n", obj.Message)
	for _, d := range obj.Details {
		switch {
		case d.Pointer != "":
			fmt.Fprintf(a.stderr, "  %s: %s\n", d.Pointer, d.Message)
		case d.Message != "":
			fmt.Fprintf(a.stderr, "  %s\n", d.Message)
		}
		for _, m := range d.Matches {
			fmt.Fprintf(a.stderr, "  %s\n", m)
		}
	}
	if obj.Hint != "" {
		fmt.Fprintln(a.stderr, obj.Hint)
	}
	return &exitErr{code: code}
}

// checkRemoteFlags refuses the flags that work in this process only.
func checkRemoteFlags(f *runFlags) error {
	for _, x := range []struct {
		set  bool
		flag string
	}{{f.record != "", "--record"}, {f.replay != "", "--replay"}, {f.events, "--events"}} {
		if x.set {
			return usageErr(fmt.Errorf("%s works in this process only, not through a server: drop it, or --server", x.flag))
		}
	}
	return nil
}

// remoteStart starts a run on the server; files, when given, are one
// spec file uploaded with the run (the server's authors only), else the
// server runs its own spec of the agent.
func (a *app) remoteStart(ctx context.Context, files []string, req api.StartRequest, out *runFlags) error {
	if err := checkRemoteFlags(out); err != nil {
		return err
	}
	if len(files) > 0 {
		text, err := a.uploadSpec(files)
		if err != nil {
			return err
		}
		req.Spec = text
	}
	ans, err := a.remote.Start(ctx, req, 0)
	if err != nil {
		return a.remoteErr(err, out.out)
	}
	return a.remoteFinish(ctx, out, ans, req.Detach, "queued; the server's workers run it")
}

// uploadSpec checks the spec of one file as run does, and returns its
// text to send.
func (a *app) uploadSpec(files []string) (string, error) {
	if len(files) != 1 {
		return "", usageErr(errors.New("run: through a server, -f names one spec file, sent with the run (or none: the server's spec of the agent)"))
	}
	if fi, err := os.Stat(files[0]); err == nil && fi.IsDir() {
		return "", usageErr(fmt.Errorf("run: through a server, -f names one spec file, not a directory (%s)", files[0]))
	}
	if _, err := a.loadSpec(files); err != nil {
		return "", err
	}
	f, err := os.Open(files[0])
	if err != nil {
		return "", inputErr(err)
	}
	defer f.Close()
	b, err := a.limits.read(files[0], f)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// remoteDecide sends a decision to the server.
func (a *app) remoteDecide(ctx context.Context, prefix string, out *runFlags, d engine.Decision) error {
	if err := checkRemoteFlags(out); err != nil {
		return err
	}
	id, err := checkRunID(prefix)
	if err != nil {
		return err
	}
	req := api.DecisionRequest{Call: d.CallID, All: d.All, Reason: d.Reason, Args: d.Args, Always: d.Always, PreviewDigest: d.Preview,
		As: d.By, Data: d.Data, Output: d.Output, Failed: d.Failed, Detach: d.Detach}
	ans, err := a.remote.Decide(ctx, d.Action, id, req, 0)
	if err != nil {
		return a.remoteErr(err, out.out)
	}
	return a.remoteFinish(ctx, out, ans, d.Detach, "decision recorded; the server's workers advance the run")
}

// remoteAdvance continues a run (send: with a message) on the server.
func (a *app) remoteAdvance(ctx context.Context, prefix string, out *runFlags, m *engine.Message) error {
	if err := checkRemoteFlags(out); err != nil {
		return err
	}
	id, err := checkRunID(prefix)
	if err != nil {
		return err
	}
	var ans *client.Answer
	if m != nil {
		ans, err = a.remote.Send(ctx, id, api.SendRequest{Text: m.Text, As: m.By}, 0)
	} else {
		ans, err = a.remote.Continue(ctx, id, 0)
	}
	if err != nil {
		return a.remoteErr(err, out.out)
	}
	return a.remoteFinish(ctx, out, ans, false, "")
}

// remoteFinish prints the run a server answered with, as finish (or,
// detached, as detached) does: one the server still advanced is followed
// until it rests.
func (a *app) remoteFinish(ctx context.Context, out *runFlags, ans *client.Answer, detach bool, note string) error {
	if detach {
		return a.detached(out, &ans.Run.RunView, note)
	}
	d := ans.Run
	if !ans.Done {
		rested, err := a.remote.Rest(ctx, d.RunID)
		switch {
		case err != nil && ctx.Err() != nil:
			// Stopped (Ctrl-C): the server goes on; the run as it stood.
			printRun(a.stdout, a.stderr, out.out, &d.RunView, a.hintTo(d.RunID))
			return &exitErr{code: exitError, err: fmt.Errorf("stopped following run %s: the server goes on advancing it", d.RunID)}
		case err != nil:
			return a.remoteErr(err, out.out)
		}
		d = rested
	}
	short := d.RunID
	if out.out == "text" && d.Status == store.Suspended {
		if s, err := a.remote.ShortID(ctx, d.RunID); err == nil {
			short = s
		}
	}
	return printRun(a.stdout, a.stderr, out.out, &d.RunView, a.hintTo(short))
}

// remoteShow prints a run, or its tree, as the server has it.
func (a *app) remoteShow(ctx context.Context, prefix string, out format, tree bool, depth int) error {
	id, err := checkRunID(prefix)
	if err != nil {
		return err
	}
	if tree {
		t, err := a.remote.Tree(ctx, id)
		switch {
		case err != nil:
			return a.remoteErr(err, out)
		case out == "json":
			return writeJSON(a.stdout, t)
		}
		if err := printTree(a, t, func(id string) (*engine.RunDetail, error) { return a.remote.Run(ctx, id) }); err != nil {
			return a.remoteErr(err, out)
		}
		return nil
	}
	d, err := a.remote.Run(ctx, id)
	rd := runReader{tree: a.remote.Tree, detail: a.remote.Run}
	switch {
	case err != nil:
		return a.remoteErr(err, out)
	case out == "json":
		j, err := withSubAgents(ctx, rd, d, depth)
		if err != nil {
			return a.remoteErr(err, out)
		}
		return writeJSON(a.stdout, j)
	}
	printDetail(a, d)
	if err := printSubAgents(ctx, a.stdout, a.hintCmd(), rd, d, depth); err != nil {
		return a.remoteErr(err, out)
	}
	return nil
}

// remoteList lists the server's runs.
func (a *app) remoteList(ctx context.Context, f store.Filter, out format) error {
	runs, err := a.remote.List(ctx, client.Filter{Status: f.Status, Agent: f.Agent, Roots: f.Roots, Limit: f.Limit})
	switch {
	case err != nil:
		return a.remoteErr(err, out)
	case out == "json":
		return writeJSON(a.stdout, runs)
	}
	printList(a, runs)
	return nil
}

// remoteEvents prints a run's events as the server streams them;
// following, it stops when the run completes or fails (or reaches until),
// once every event stored by then is printed.
func (a *app) remoteEvents(ctx context.Context, prefix string, follow bool, until store.Status) error {
	id, err := checkRunID(prefix)
	if err != nil {
		return err
	}
	// The stored events: the server ends the stream once the run is at
	// rest and every event is sent (until=rest; follow=false ends it at
	// once on a server that says so, a running run included).
	s := client.Stream{RunID: id, UntilRest: true}
	var last client.Event
	print := func(ev client.Event) (bool, error) {
		fmt.Fprintf(a.stdout, "%s\n", ev.Data)
		s.After, last = ev.ID, ev
		return false, nil
	}
	if follow {
		// The server ends the stream each time the run may have come to
		// rest; the run is read then.
		done, ended := false, false
		f := client.Stream{RunID: id, Follow: true, UntilRest: true, Ended: func(ctx context.Context) (bool, error) {
			d, err := a.remote.Run(ctx, id)
			if err != nil {
				return false, err
			}
			done = d.Status.Terminal() || (until != "" && d.Status == until)
			// The run's own finish or error is the last event of a run
			// that ended: nothing is left to read.
			ended = d.Status.Terminal() && lastOf(last, d.RunID)
			return done, nil
		}}
		if err := a.remote.Events(ctx, f, print); err != nil || !done || ended {
			return a.remoteErr(err, "text")
		}
	}
	// The events stored so far (following: those after the last printed).
	return a.remoteErr(a.remote.Events(ctx, s, print), "text")
}

// lastOf reports whether ev ends run runID: its finish or error.
func lastOf(ev client.Event, runID string) bool {
	if ev.Type != string(engine.EventFinish) && ev.Type != string(engine.EventError) {
		return false
	}
	var e struct {
		RunID string `json:"runId"`
	}
	return json.Unmarshal(ev.Data, &e) == nil && e.RunID == runID
}

// checkRunID checks a run id prefix as resolveRun does, and returns it
// in upper case.
func checkRunID(prefix string) (string, error) {
	p := strings.ToUpper(prefix)
	if p == "" || len(p) > 26 || strings.Trim(p, "0123456789ABCDEFGHJKMNPQRSTVWXYZ") != "" {
		return "", usageErr(fmt.Errorf("invalid run id %q: run ids are 26 characters of 0-9 and A-Z (no I, L, O, U); any unique prefix works", prefix))
	}
	return p, nil
}
