package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

// interactiveHelp is what run, continue and approve add to their help
// about -i.
const interactiveHelp = `

With -i (standard input a terminal), each call the run waits for is
shown and asked about here, one at a time: approve, decline with a
reason, edit the arguments in $VISUAL or $EDITOR (default vi), or give
resume data in the editor, starting from a template made from the
tool's resumeSchema; edits are checked against the schema and nothing is
written until they pass. The run then continues in this process, and
the next call it waits for is asked about, until it completes or fails;
q, end of input or Ctrl-C leaves the rest waiting for others (exit 3).
Decisions go through the same policy and audit as the commands, and a
call someone else decided meanwhile is reported and skipped.`

// errQuit ends a session at the user's word: q, end of input or Ctrl-C.
var errQuit = errors.New("quit")

// addInteractiveFlag adds -i to a command that advances a run, and says
// so in its help.
func addInteractiveFlag(cmd *cobra.Command, on *bool) {
	cmd.Flags().BoolVarP(on, "interactive", "i", false, "ask at this terminal about each call the run waits for (approve, decline, edit, resume)")
	cmd.Long += interactiveHelp
}

// checkInteractive refuses -i where it cannot work, before anything is
// read or started.
func (a *app) checkInteractive(cmd string, out *runFlags, detach bool) error {
	switch {
	case a.remote != nil:
		return usageErr(fmt.Errorf("%s -i decides at this terminal against a database; through a server (--server), decide with agentctl approve, decline or resume", cmd))
	case detach:
		return usageErr(fmt.Errorf("%s: -i and --detach exclude each other: -i continues the run in this process", cmd))
	case out.out == "json":
		return usageErr(fmt.Errorf("%s: -i asks at a terminal, and -o json is for scripts: drop one", cmd))
	case out.events:
		return usageErr(fmt.Errorf("%s: -i and --events exclude each other: the events would mix with the questions", cmd))
	}
	if f, ok := a.stdin.(*os.File); !ok || !isTerminal(f) {
		return inputErr(fmt.Errorf("%s -i asks at a terminal, and standard input is not one: decide with agentctl approve, decline or resume instead", cmd))
	}
	if !isTerminal(a.stdout) { // painted for colour, or not
		return inputErr(fmt.Errorf("%s -i asks at a terminal, and standard output is not one: its questions would go where no one reads them", cmd))
	}
	return nil
}

// session asks, at a terminal, about each call a run waits for, and
// carries out the answers through Engine.Decide.
type session struct {
	a     *app
	e     *engine.Engine
	w     io.Writer
	in    *bufio.Reader
	scope string          // the run named: the calls of its subtree are asked about
	base  engine.Decision // --as and --reason of approve -i
	// asked holds the calls this session asked about and is done with
	// (decided, refused, taken by another process): not asked again.
	asked map[string]bool
	// drafts are the last edits of each call, to edit again after a
	// mistake.
	drafts map[string][]byte
	shown  bool // a call was shown
}

// interact asks about the calls run v waits for, in the subtree of
// scope, continuing it after each decision, until it completes, fails
// or the user leaves it waiting; then prints it as the command would.
func (a *app) interact(ctx context.Context, e *engine.Engine, out *runFlags, scope string, base engine.Decision, v *engine.RunView) error {
	s := &session{
		a: a, e: e, w: a.stdout, in: bufio.NewReader(a.stdin), scope: scope, base: base,
		asked: map[string]bool{}, drafts: map[string][]byte{},
	}
	v, err := s.loop(ctx, v)
	if err != nil {
		return err
	}
	if s.shown {
		fmt.Fprintln(s.w) // the run apart from the last answer
	}
	return a.finish(out, v)
}

// loop asks until nothing is left to ask about, and returns the run as
// it was last seen.
func (s *session) loop(ctx context.Context, v *engine.RunView) (*engine.RunView, error) {
	for v.Status == store.Suspended {
		p, err := s.next(ctx, v)
		if err != nil || p == nil {
			return v, err
		}
		nv, err := s.ask(ctx, v, *p)
		switch {
		case errors.Is(err, errQuit):
			fmt.Fprintln(s.w, "left the run waiting")
			return v, nil
		case err != nil:
			return nil, err
		}
		v = nv
	}
	return v, nil
}

// next is the first call of the scope's subtree that waits for approval
// or resume data and was not asked about yet; nil when none is left.
func (s *session) next(ctx context.Context, v *engine.RunView) (*engine.PendingView, error) {
	pending := v.Pending
	if v.RunID != s.scope {
		// A decision returns the root's view; a child named keeps to its
		// own subtree.
		sv, err := s.e.Inspect(ctx, s.scope)
		if err != nil {
			return nil, fmt.Errorf("read run %s: %w", s.scope, err)
		}
		pending = sv.Pending
	}
	for _, p := range pending {
		if (p.Kind == store.KindApproval || p.Kind == store.KindSuspend) && !s.asked[p.CallID] {
			return &p, nil
		}
	}
	return nil, nil
}

// ask shows call p, reads answers until one is carried out, and returns
// the run as it is afterwards.
func (s *session) ask(ctx context.Context, v *engine.RunView, p engine.PendingView) (*engine.RunView, error) {
	s.printCall(p)
	prompt := "[a]pprove  [d]ecline  [e]dit args  [q]uit (leave it waiting) > "
	if p.Kind == store.KindSuspend {
		prompt = "[r]esume with data  [d]ecline  [q]uit (leave it waiting) > "
	}
	for {
		answer, err := s.readLine(prompt)
		if err != nil {
			return nil, err
		}
		var (
			nv    *engine.RunView
			again bool
		)
		switch a := strings.ToLower(answer); {
		case a == "":
			continue
		case a == "q" || a == "quit":
			return nil, errQuit
		case (a == "a" || a == "approve") && p.Kind == store.KindApproval:
			nv, again, err = s.decide(ctx, v, p, s.decision(p, store.Approve))
		case (a == "e" || a == "edit") && p.Kind == store.KindApproval:
			nv, again, err = s.editArgs(ctx, v, p)
		case (a == "r" || a == "resume") && p.Kind == store.KindSuspend:
			nv, again, err = s.editResume(ctx, v, p)
		case a == "d" || a == "decline":
			nv, again, err = s.decline(ctx, v, p)
		default:
			fmt.Fprintf(s.w, "%q is not an answer here\n", answer)
			continue
		}
		if err != nil || !again {
			return nv, err
		}
	}
}

// decision is the session's decision of action on call p.
func (s *session) decision(p engine.PendingView, action store.Action) engine.Decision {
	d := s.base
	d.Action, d.RunID, d.CallID, d.OSUser = action, s.scope, p.CallID, osUser()
	return d
}

// decline asks for a reason and declines call p.
func (s *session) decline(ctx context.Context, v *engine.RunView, p engine.PendingView) (*engine.RunView, bool, error) {
	reason, err := s.readLine("reason (told to the model; empty for none) > ")
	if err != nil {
		return nil, false, err
	}
	if err := s.a.limits.check("the reason", []byte(reason)); err != nil {
		fmt.Fprintf(s.w, "%v\n", err)
		return nil, true, nil
	}
	d := s.decision(p, store.Decline)
	if reason != "" {
		d.Reason = reason
	}
	return s.decide(ctx, v, p, d)
}

// decide carries out d on call p through Engine.Decide. again: the
// input was refused and nothing written; ask about the call again.
// A refusal of the policy, or a call another process took meanwhile,
// is reported and the session goes on to the next call.
func (s *session) decide(ctx context.Context, v *engine.RunView, p engine.PendingView, d engine.Decision) (nv *engine.RunView, again bool, err error) {
	// Said once recorded, before the run goes on in this process.
	d.Recorded = func() { fmt.Fprintf(s.w, "%s %s (%s)\n", done(d), p.CallID, escaped(p.Tool, false)) }
	nv, err = s.e.Decide(ctx, d)
	var input *engine.InputError
	switch {
	case err == nil:
		s.asked[p.CallID] = true
		s.stillWaiting(nv, p)
		return nv, false, nil
	case errors.As(err, &input) && input.Field == engine.InputReason:
		return s.askReason(ctx, v, p, d)
	case errors.As(err, &input):
		s.printInput(input)
		return nil, true, nil
	case errors.Is(err, store.ErrForbidden):
		s.asked[p.CallID] = true
		fmt.Fprintf(s.w, "refused: %s\nthe call stays waiting (the attempt is recorded)\n", phrase(err))
		return v, false, nil
	case errors.Is(err, store.ErrConflict):
		s.asked[p.CallID] = true
		fmt.Fprintf(s.w, "conflict: %s\nreading the run again\n", phrase(err))
		nv, err = s.e.Inspect(ctx, v.RunID)
		if err != nil {
			return nil, false, fmt.Errorf("read run %s: %w", v.RunID, err)
		}
		return nv, false, nil
	}
	return nil, false, err
}

// askReason asks for the reason the call's tool requires
// (requireReason) of decision d, and decides again with it; none given,
// nothing is recorded and the call is asked about again.
func (s *session) askReason(ctx context.Context, v *engine.RunView, p engine.PendingView, d engine.Decision) (*engine.RunView, bool, error) {
	reason, err := s.readLine("reason (" + escaped(p.Tool, false) + " asks every decision for one) > ")
	if err != nil {
		return nil, false, err
	}
	if err := s.a.limits.check("the reason", []byte(reason)); err != nil {
		fmt.Fprintf(s.w, "%v\n", err)
		return nil, true, nil
	}
	if strings.TrimSpace(reason) == "" {
		fmt.Fprintln(s.w, "no reason: nothing was recorded")
		return nil, true, nil
	}
	d.Reason = reason
	return s.decide(ctx, v, p, d)
}

// done says what a decision did.
func done(d engine.Decision) string {
	switch {
	case d.Action == store.Approve && d.Args != nil:
		return "approved with the edited arguments:"
	case d.Action == store.Approve:
		return "approved"
	case d.Action == store.Decline:
		return "declined"
	}
	return "resumed"
}

// stillWaiting says so when call p waits on after a decision (more
// approvals needed, or a tool that suspends again).
func (s *session) stillWaiting(v *engine.RunView, p engine.PendingView) {
	if v == nil {
		return
	}
	for _, q := range v.Pending {
		if q.CallID != p.CallID {
			continue
		}
		if q.Needed > 1 {
			fmt.Fprintf(s.w, "call %s has %d of %d approvals: it waits for another approver\n", q.CallID, q.Approvals, q.Needed)
			return
		}
		fmt.Fprintf(s.w, "call %s waits again\n", q.CallID)
		s.asked[p.CallID] = false
	}
}

// printInput says why edited arguments or resume data were refused,
// each violation at its JSON pointer.
func (s *session) printInput(e *engine.InputError) {
	what, schema := "the arguments", "the tool's input schema"
	if e.Field == engine.InputData {
		what, schema = "the resume data", "the tool's resumeSchema"
	}
	switch {
	case len(e.Violations) > 0:
		fmt.Fprintf(s.w, "%s break %s:\n", what, schema)
		for _, v := range e.Violations {
			fmt.Fprintf(s.w, "  %s: %s\n", escaped(v.Pointer, false), escaped(v.Message, false))
		}
	case e.Problem == engine.ProblemNotObject:
		fmt.Fprintf(s.w, "%s must be a JSON object\n", what)
	default:
		fmt.Fprintf(s.w, "%s\n", escaped(phrase(e), true))
	}
	fmt.Fprintln(s.w, "nothing was recorded; edit again, or answer otherwise")
}

// printCall shows a waiting call: where, what, why.
func (s *session) printCall(p engine.PendingView) {
	w := s.w
	s.shown = true
	what := "waits for approval"
	if p.Kind == store.KindSuspend {
		what = "suspended itself: waits for resume data"
	}
	fmt.Fprintf(w, "\n%s  %s  %s\n", p.CallID, escaped(p.Tool, false), what)
	fmt.Fprintf(w, "  in %s (run %s)\n", escaped(strings.Join(p.Path, " > "), false), p.RunID)
	fmt.Fprintln(w, "  args:")
	printBlock(w, "    ", prettyJSON(p.Args))
	if p.Gate != nil {
		fmt.Fprintf(w, "  approval: %s\n", escaped(p.Gate.Phrase(), false))
	}
	if p.GateError != "" {
		fmt.Fprintf(w, "  requireApproval failed: %s\n", escaped(p.GateError, false))
	}
	if p.Needed > 1 {
		fmt.Fprintf(w, "  %d of %d approvals\n", p.Approvals, p.Needed)
	}
	switch {
	case p.Overdue:
		fmt.Fprintf(w, "  overdue since %s\n", stamp(*p.Deadline))
	case p.Deadline != nil:
		fmt.Fprintf(w, "  expires %s\n", stamp(*p.Deadline))
	}
	if p.Kind == store.KindSuspend {
		fmt.Fprintln(w, "  payload:")
		printBlock(w, "    ", prettyJSON(p.Payload))
		if len(p.ResumeSchema) > 0 {
			fmt.Fprintf(w, "  resume data must satisfy: %s\n", escaped(string(p.ResumeSchema), false))
		}
	}
}

// readLine prompts and reads one line of standard input. It reads only
// when asked, so that an editor started between prompts has the
// terminal to itself. End of input and Ctrl-C are errQuit.
func (s *session) readLine(prompt string) (string, error) {
	fmt.Fprint(s.w, prompt)
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := s.in.ReadString('\n')
		ch <- result{line, err}
	}()
	select {
	case r := <-ch:
		switch {
		case errors.Is(r.err, io.EOF):
			fmt.Fprintln(s.w)
			return "", errQuit
		case r.err != nil:
			return "", fmt.Errorf("read standard input: %w", r.err)
		}
		return strings.TrimSpace(r.line), nil
	case <-s.a.stop:
		// The reader is left blocked: the session ends.
		fmt.Fprintln(s.w)
		return "", errQuit
	}
}

// approveInteractive is approve -i: it asks about each call the run
// waits for, deciding with d's --as and --reason.
func (a *app) approveInteractive(cmd *cobra.Command, runID string, out *runFlags, d engine.Decision) error {
	for _, f := range []string{"call", "all", "args", "always"} {
		if cmd.Flags().Changed(f) {
			return usageErr(fmt.Errorf("approve -i asks about each waiting call in turn: drop --%s", f))
		}
	}
	if err := a.checkInteractive("approve", out, d.Detach); err != nil {
		return err
	}
	if err := a.limits.check("--reason", []byte(d.Reason)); err != nil {
		return err
	}
	ctx := cmd.Context()
	e, id, err := a.engineAndRun(ctx, runID, out)
	if err != nil {
		return err
	}
	v, err := e.Inspect(ctx, id)
	if err != nil {
		return err
	}
	if v.Status != store.Suspended {
		return &exitErr{code: exitConflict, err: fmt.Errorf("run %s is %s: no call waits for a decision", v.RunID, v.Status)}
	}
	return a.interact(ctx, e, out, id, engine.Decision{By: d.By, Reason: d.Reason}, v)
}
