package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
)

// RunView is a run as users and scripts see it (agentctl -o json).
type RunView struct {
	RunID     string        `json:"runId"`
	Agent     string        `json:"agent"`
	Status    store.Status  `json:"status"`
	Input     string        `json:"input"`
	Output    string        `json:"output"`
	Error     string        `json:"error"`
	Pending   []PendingView `json:"pending"`
	CreatedAt time.Time     `json:"createdAt"`
	UpdatedAt time.Time     `json:"updatedAt"`
	// Notice tells what a command could not do without failing, such as
	// resume data that could not be taken from a message.
	Notice string `json:"notice,omitempty"`
	// A child run works for a delegation of its parent; RootID names the
	// run a user started, where every call waiting in the tree is listed.
	RootID   string   `json:"rootId"`
	ParentID string   `json:"parentId,omitempty"`
	Path     []string `json:"path"`
	Usage    Usage    `json:"usage"` // model calls and tokens so far
	// StartedBy is the OS user who started the run's tree.
	StartedBy string `json:"startedBy,omitempty"`
	// Labels are the run's labels (run --label).
	Labels map[string]string `json:"labels,omitempty"`
	// Upload is who uploaded the run's spec to a server, and its
	// digest; absent for a configured spec. Views of one run (show, the
	// API's run and approvals) carry it.
	Upload *Upload `json:"upload,omitempty"`
}

// PendingView is a call waiting for a human: for approval, or for resume
// data when the tool suspended itself.
type PendingView struct {
	CallID       string          `json:"callId"`
	RunID        string          `json:"runId"` // the run it belongs to: the root's or a child's
	Path         []string        `json:"path"`  // agents from the root to that run
	Tool         string          `json:"tool"`
	Args         json.RawMessage `json:"args"`
	Kind         store.Kind      `json:"kind"`                   // approval or suspend
	Gate         *store.Gate     `json:"gate,omitempty"`         // why approval is needed
	GateError    string          `json:"gateError,omitempty"`    // the requireApproval expression's error
	Preview      *store.Preview  `json:"preview,omitempty"`      // what the tool's preview showed (docs/previews.md)
	PreviewDrift *store.Drift    `json:"previewDrift,omitempty"` // the preview approved before, which a run before execution contradicted
	Payload      json.RawMessage `json:"payload,omitempty"`      // what a suspended call shows
	ResumeSchema json.RawMessage `json:"resumeSchema,omitempty"` // what its resume data must satisfy
	Deadline     *time.Time      `json:"deadline,omitempty"`     // when it expires
	// Overdue: the deadline has passed. Reads only show it; agentctl
	// expire, the next decision on the run, or a worker declines it.
	Overdue bool `json:"overdue,omitempty"`
	// Needed approvals from different people, and how many it has.
	Needed    int `json:"approvalsNeeded,omitempty"`
	Approvals int `json:"approvals,omitempty"`
	// Action is what the call will do, for a call of an uploaded spec.
	Action *ActionView `json:"action,omitempty"`
	// Approvers name who may decide (users, group:NAME); AlsoApprovers
	// are further lists when a supervisor's gate holds the call as well
	// as its own: whoever decides is named in each. None: anyone (through
	// a server, its approvers role). NotBy is the run's starter under
	// separateDuties. Detail (show) sets them.
	Approvers     []string   `json:"approvers,omitempty"`
	AlsoApprovers [][]string `json:"alsoApprovers,omitempty"`
	NotBy         string     `json:"notBy,omitempty"`
	// Escalation is the call's escalation ladder: what happened, what
	// is next and when (docs/escalation.md); nil for none.
	Escalation *EscalationView `json:"escalation,omitempty"`
}

// MayDecide says who may decide p in words, as Deciders.String does; ""
// when no list names anyone.
func (p PendingView) MayDecide() string {
	if len(p.Approvers) == 0 {
		return ""
	}
	return PhraseApprovers(append([][]string{p.Approvers}, p.AlsoApprovers...))
}

// RunDetail is a run with its whole call ledger and audit trail
// (agentctl show).
type RunDetail struct {
	RunView
	Calls []CallView `json:"calls"`
	// Decisions are those made in the run and in every run below it in
	// its tree (of a root: the whole tree), in the order they were made.
	Decisions []DecisionView `json:"decisions"`
	Grants    []string       `json:"grants"` // tools approved for the rest of the run
}

// CallView is one tool call of a run.
type CallView struct {
	CallID string           `json:"callId"`
	Tool   string           `json:"tool"`
	Args   json.RawMessage  `json:"args"`
	Status store.CallStatus `json:"status"`
	// Result is a JSON object for a toolkit's structured result (exec
	// {exitCode, stdout, stderr}, http {status, headers, body}), a
	// string otherwise: text results, errors, declines (ResultJSON).
	Result    json.RawMessage `json:"result"`
	Gate      *store.Gate     `json:"gate,omitempty"`
	GateError string          `json:"gateError,omitempty"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	Resume    json.RawMessage `json:"resume,omitempty"`
	CreatedAt time.Time       `json:"createdAt"` // when the model made it
	UpdatedAt time.Time       `json:"updatedAt"` // its last change: its result, for a done call
	// StartedAt is when the tool last started (a retry starts it again),
	// FinishedAt when it then ended, Duration the time between, in
	// seconds: absent when the call never ran or its end is unknown
	// (interrupted, resolved by hand).
	StartedAt  *time.Time `json:"startedAt,omitempty"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	Duration   *float64   `json:"durationSeconds,omitempty"`
}

// timed fills a call view's start, end and duration from the ledger.
func (c *CallView) timed(sc *store.Call) {
	if sc.StartedAt.IsZero() {
		return
	}
	start := sc.StartedAt.UTC()
	c.StartedAt = &start
	if sc.FinishedAt.IsZero() {
		return
	}
	end := sc.FinishedAt.UTC()
	d := end.Sub(start).Seconds()
	c.FinishedAt, c.Duration = &end, &d
}

// ResultText is the call's result as the model was told it: the text,
// or the object as compact JSON.
func (c CallView) ResultText() string {
	var s string
	if json.Unmarshal(c.Result, &s) == nil {
		return s
	}
	return string(c.Result)
}

// DecisionView is one record of the audit trail.
type DecisionView struct {
	RunID      string          `json:"runId"` // the run of the call: the run's own or a sub-run's
	Path       []string        `json:"path"`  // agents from the root to that run
	CallID     string          `json:"callId"`
	Action     store.Action    `json:"action"` // approve, decline, resume, expire, grant, retry, resolve or refused
	By         string          `json:"by"`
	OSUser     string          `json:"osUser"`
	Via        string          `json:"via,omitempty"` // how a server identified the decider: socket, token, proxy or slack
	Reason     string          `json:"reason"`
	ArgsBefore json.RawMessage `json:"argsBefore,omitempty"`
	ArgsAfter  json.RawMessage `json:"argsAfter,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	At         time.Time       `json:"at"`
}

// gateOf is a call's gate for a view: nil when nothing was recorded.
func gateOf(c *store.Call) *store.Gate {
	if c.Gate.Zero() {
		return nil
	}
	g := c.Gate
	return &g
}

// view renders a run with the calls waiting for a human; paths names the
// agents from the root to each run of the tree (nil: the run's own).
func view(r *store.Run, pending []*store.Call, paths map[string][]string) *RunView {
	v := &RunView{
		RunID: r.ID, Agent: r.Agent, Status: r.Status, Input: r.Input, Output: r.Output, Error: r.Error,
		Pending: []PendingView{}, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		RootID: r.RootID, ParentID: r.ParentID, Path: r.Path, Usage: r.Usage, StartedBy: r.StartedBy,
		Labels: labelsOf(r),
	}
	for _, c := range pending {
		if c.Kind == store.KindDelegation {
			continue // settled by its child, whose own calls are listed
		}
		path := paths[c.RunID]
		if path == nil {
			path = r.Path
		}
		p := PendingView{CallID: c.ID, RunID: c.RunID, Path: path, Tool: c.Tool, Args: c.Args, Kind: c.Kind, GateError: c.GateError,
			Payload: c.Payload, ResumeSchema: c.ResumeSchema, Needed: c.Needed, Approvals: c.Approvals}
		p.Gate, p.Preview, p.PreviewDrift = pendingGate(c)
		if !c.Deadline.IsZero() {
			p.Deadline = &c.Deadline
		}
		v.Pending = append(v.Pending, p)
	}
	return v
}

// Inspect returns a run by its full id with the calls waiting for a
// human in its subtree (the whole tree for a root). It only reads.
func (e *Engine) Inspect(ctx context.Context, id string) (*RunView, error) {
	r, t, err := e.load(ctx, id)
	if err != nil {
		return nil, err
	}
	return e.uploaded(ctx, e.overdue(t.view(r)), t), nil
}

// uploaded adds to v, a view of a run of tree t, who uploaded its spec
// and what each of its waiting calls will do; v as it is for a
// configured spec, or when the spec cannot be read.
func (e *Engine) uploaded(ctx context.Context, v *RunView, t *tree) *RunView {
	g, err := e.graph(ctx, t.root.SpecHash)
	if err != nil || g.upload == nil {
		return v
	}
	up := *g.upload
	v.Upload = &up
	calls := make(map[string]*store.Call, len(t.calls))
	for _, c := range t.calls {
		calls[c.RunID+"/"+c.ID] = c
	}
	for i, p := range v.Pending {
		if c, r := calls[p.RunID+"/"+p.CallID], t.runs[p.RunID]; c != nil && r != nil {
			v.Pending[i].Action = e.preview(ctx, g, r, c)
		}
	}
	return v
}

// overdue marks the pending calls of v whose deadline has passed.
func (e *Engine) overdue(v *RunView) *RunView {
	now := e.now()
	for i, p := range v.Pending {
		v.Pending[i].Overdue = p.Deadline != nil && p.Deadline.Before(now)
	}
	return v
}

// view renders run r of the tree with the waiting calls of its subtree.
func (t *tree) view(r *store.Run) *RunView {
	paths := make(map[string][]string, len(t.runs))
	for id, run := range t.runs {
		paths[id] = run.Path
	}
	var mine []*store.Call
	for _, c := range t.waiting() {
		if t.under(c.RunID, r.ID) {
			mine = append(mine, c)
		}
	}
	return view(r, mine, paths)
}

// under reports whether run id is ancestor or one of its descendants.
func (t *tree) under(id, ancestor string) bool {
	for id != "" {
		if id == ancestor {
			return true
		}
		r := t.runs[id]
		if r == nil {
			return false
		}
		id = r.ParentID
	}
	return false
}

// Detail returns a run by its full id with its calls, decisions and
// grants. It only reads.
func (e *Engine) Detail(ctx context.Context, id string) (*RunDetail, error) {
	r, t, all, err := e.read(ctx, id, true)
	if err != nil {
		return nil, err
	}
	calls := slices.DeleteFunc(slices.Clone(t.calls), func(c *store.Call) bool { return c.RunID != id })
	ds := subtreeDecisions(t, all, id)
	d := &RunDetail{RunView: *e.uploaded(ctx, e.overdue(t.view(r)), t), Calls: []CallView{}, Decisions: []DecisionView{}, Grants: grantsOf(ds, calls, id)}
	e.deciders(ctx, t, &d.RunView)
	for _, c := range calls {
		cv := CallView{CallID: c.ID, Tool: c.Tool, Args: c.Args, Status: c.Status, Result: ResultJSON(c.Result, c.ResultObject),
			Gate: gateOf(c), GateError: c.GateError, Payload: c.Payload, Resume: c.Resume, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
		cv.timed(c)
		d.Calls = append(d.Calls, cv)
	}
	for _, x := range ds {
		d.Decisions = append(d.Decisions, DecisionView{RunID: x.RunID, Path: t.runs[x.RunID].Path, CallID: x.CallID,
			Action: x.Action, By: x.By, OSUser: x.OSUser, Via: x.Via, Reason: x.Reason, ArgsBefore: x.ArgsBefore, ArgsAfter: x.ArgsAfter,
			Data: x.Data, At: x.At})
	}
	return d, nil
}

// deciders sets who may decide each call of v waiting for a human, by
// the policies of its run's spec snapshot; where the snapshot cannot be
// compiled here, it says nothing.
func (e *Engine) deciders(ctx context.Context, t *tree, v *RunView) {
	for i := range v.Pending {
		p := &v.Pending[i]
		r := t.runs[p.RunID]
		if r == nil {
			continue
		}
		g, err := e.graph(ctx, r.SpecHash)
		if err != nil {
			continue
		}
		fired, c := e.pendingEscalation(ctx, g, r, t, p)
		d := decidersOf(g.callPolicies(r, c, fired, spec.Approvers{}), r.StartedBy)
		if lists := d.Lists(); len(lists) > 0 {
			p.Approvers, p.AlsoApprovers = lists[0], lists[1:]
		}
		p.NotBy = d.NotBy
		if g.upload != nil {
			p.NotBy = g.upload.By
		}
	}
}

// grantsOf lists, sorted and once each, the tools whose later calls in
// run id are approved by a grant (approve --always) among decisions ds;
// calls are the run's.
func grantsOf(ds []*store.Decision, calls []*store.Call, id string) []string {
	tools := []string{}
	for _, x := range ds {
		if x.RunID != id || x.Action != store.Grant {
			continue
		}
		if i := slices.IndexFunc(calls, func(c *store.Call) bool { return c.ID == x.CallID }); i >= 0 && !slices.Contains(tools, calls[i].Tool) {
			tools = append(tools, calls[i].Tool)
		}
	}
	slices.Sort(tools)
	return tools
}

// subtreeDecisions keeps, of a tree's decisions (in the order made),
// those made in run id and in every run below it, ordered by when they
// were made (runs in tree order where made at the same instant).
func subtreeDecisions(t *tree, all []*store.Decision, id string) []*store.Decision {
	at := make(map[string]int, len(t.order))
	for i, r := range t.order {
		at[r.ID] = i
	}
	var ds []*store.Decision
	for _, x := range all {
		if t.under(x.RunID, id) {
			ds = append(ds, x)
		}
	}
	slices.SortStableFunc(ds, func(a, b *store.Decision) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return at[a.RunID] - at[b.RunID]
	})
	return ds
}

// treeDecisions returns the decisions made in run id and in every run
// below it in tree t, in the order they were made (runs in tree order
// where made at the same instant).
func (e *Engine) treeDecisions(ctx context.Context, t *tree, id string) ([]*store.Decision, error) {
	var ds []*store.Decision
	for _, r := range t.order {
		if !t.under(r.ID, id) {
			continue
		}
		more, err := e.store.Decisions(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		ds = append(ds, more...)
	}
	slices.SortStableFunc(ds, func(a, b *store.Decision) int { return a.At.Compare(b.At) })
	return ds, nil
}

// List returns runs matching f, newest first, with their pending calls.
// It only reads.
func (e *Engine) List(ctx context.Context, f store.Filter) ([]*RunView, error) {
	runs, err := e.store.List(ctx, f)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(runs))
	for _, r := range runs {
		if r.Status == store.Suspended {
			ids = append(ids, r.ID)
		}
	}
	pending, err := e.store.Pending(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]*RunView, len(runs))
	for i, r := range runs {
		calls := pending[r.ID]
		switch {
		case !slices.ContainsFunc(calls, func(c *store.Call) bool { return c.Kind == store.KindDelegation }):
		case r.ParentID == "":
			// A tree: list what waits anywhere in it, in two queries.
			v, err := e.treeView(ctx, r)
			if err != nil {
				return nil, err
			}
			out[i] = v
			continue
		default:
			// A sub-agent's run listed by agent: what waits in its subtree.
			_, t, err := e.load(ctx, r.ID)
			if err != nil {
				return nil, err
			}
			out[i] = e.overdue(t.view(r))
			continue
		}
		out[i] = e.overdue(view(r, calls, nil))
	}
	return out, nil
}

// treeView is the view of root run r with what waits anywhere in its
// tree, each call with the path of its run.
func (e *Engine) treeView(ctx context.Context, r *store.Run) (*RunView, error) {
	calls, err := e.store.TreePending(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	runs, err := e.store.Tree(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	paths := map[string][]string{}
	for _, x := range runs {
		paths[x.ID] = x.Path
	}
	return e.overdue(view(r, calls, paths)), nil
}

// Resolve returns the full id of the run whose id starts with prefix.
func (e *Engine) Resolve(ctx context.Context, prefix string) (string, error) {
	return e.store.ResolveID(ctx, prefix)
}

// MinShortID is the shortest run id prefix ShortID returns: a run id
// starts with its creation time, 10 characters to the millisecond, so
// runs created later never share a prefix this long with it (runs
// created in the same millisecond, like a tree's, may: ShortID then
// takes more).
const MinShortID = 10

// ShortID returns the shortest prefix of run id id, at least MinShortID
// characters, that no other stored run id starts with: what the command
// line prints for people to type back, and Resolve accepts. It only
// reads.
func (e *Engine) ShortID(ctx context.Context, id string) (string, error) {
	if len(id) <= MinShortID {
		return id, nil
	}
	// Most runs are alone in their millisecond: one query. Otherwise the
	// ids that share the shortest prefix tell how long a prefix must be
	// to leave them out, and the next query tries that length; only when
	// more ids share it than were listed is the rest found by halving.
	lo, hi := MinShortID, len(id)
	n, guessed := lo, false
	for lo < hi {
		got, err := e.store.ResolveID(ctx, id[:n])
		var amb *store.AmbiguousError
		switch {
		case errors.As(err, &amb):
			lo = min(max(n+1, sharedPrefix(id, amb.Matches)+1), hi)
		case err != nil:
			return "", fmt.Errorf("short id of run %s: %w", id, err)
		case got != id:
			return "", &store.NotFoundError{What: "no run " + id}
		default:
			hi = n
		}
		n = (lo + hi) / 2
		if amb != nil && !guessed {
			n, guessed = lo, true
		}
	}
	return id[:lo], nil
}

// sharedPrefix is the length of the longest prefix id shares with any
// of the other ids.
func sharedPrefix(id string, others []string) int {
	longest := 0
	for _, o := range others {
		if o == id {
			continue
		}
		n := 0
		for n < len(id) && n < len(o) && id[n] == o[n] {
			n++
		}
		longest = max(longest, n)
	}
	return longest
}

// MessageView is one message of a run's conversation as the inbox shows
// it: who said it (user, assistant, tool; the system prompt is not
// shown), its text, and the calls an assistant's message made.
type MessageView struct {
	Role  string   `json:"role"`
	Text  string   `json:"text,omitempty"`
	Calls []string `json:"calls,omitempty"` // the call ids of an assistant's tool calls
}

// Conversation returns run id's conversation so far, without the system
// prompt. It only reads.
func (e *Engine) Conversation(ctx context.Context, id string) ([]MessageView, error) {
	r, err := e.store.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	st, err := decodeState(r)
	if err != nil {
		return nil, fmt.Errorf("conversation of run %s: %w", id, err)
	}
	out := []MessageView{}
	for _, m := range st.Messages {
		if m.Role == "system" {
			continue
		}
		v := MessageView{Role: m.Role, Text: m.Text}
		for _, tc := range m.ToolCalls {
			v.Calls = append(v.Calls, tc.ID)
		}
		out = append(out, v)
	}
	return out, nil
}
