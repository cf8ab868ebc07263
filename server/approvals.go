package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

// kinds are the kinds of waiting calls the inbox filters on.
var kinds = []store.Kind{store.KindApproval, store.KindSuspend, store.KindInterrupted}

// approvals is GET /v1/approvals: every call waiting for a human across
// runs and trees, oldest first, with who may decide it. A caller without
// the reader role (one the spec names as an approver, but the server
// gives no role) sees only the calls its approvers name it for, by name
// or group.
func (s *Server) approvals(w http.ResponseWriter, r *http.Request, p *Principal) error {
	q := r.URL.Query()
	n, err := limitOf(r)
	if err != nil {
		return err
	}
	f := store.WaitingFilter{Agent: q.Get("agent"), Kind: store.Kind(q.Get("kind")), After: q.Get("cursor"), Limit: n}
	if f.Kind != "" && !slices.Contains(kinds, f.Kind) {
		return invalid(fmt.Sprintf("kind %q: want one of %v", f.Kind, kinds), api.Detail{Pointer: "/kind", Message: "unknown kind"})
	}
	reader := s.has(p, RoleReader)
	out := api.List[api.Approval]{Items: []api.Approval{}}
	for {
		waiting, err := s.store.Waiting(r.Context(), f)
		if errors.Is(err, store.ErrBadCursor) {
			return invalid(fmt.Sprintf("cursor %q: not one this server made", f.After), api.Detail{Pointer: "/cursor", Message: "bad cursor"})
		}
		if err != nil {
			return err
		}
		for i, wc := range waiting {
			a, who, err := s.approval(r, wc)
			if err != nil {
				return err
			}
			// Named in every list, by name or group: no list names nobody
			// (the server's approvers role, which implies reading).
			if reader || who.Names(p.Name, p.Groups) {
				out.Items = append(out.Items, a)
			}
			if len(out.Items) == n {
				if i < len(waiting)-1 || len(waiting) == f.Limit {
					out.Next = wc.Cursor
				}
				writeJSON(w, http.StatusOK, out)
				return nil
			}
		}
		if len(waiting) < f.Limit {
			break
		}
		f.After = waiting[len(waiting)-1].Cursor // a non-reader's page is not full yet
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// approval is one inbox item.
func (s *Server) approval(r *http.Request, wc store.WaitingCall) (api.Approval, engine.Deciders, error) {
	c, run := wc.Call, wc.Run
	who, err := s.eng.Deciders(r.Context(), run, c)
	if err != nil {
		return api.Approval{}, who, err
	}
	a := api.Approval{RunID: run.ID, RootID: run.RootID, CallID: c.ID, Agent: run.Agent, Path: run.Path, Tool: c.Tool,
		Args: c.Args, Kind: string(c.Kind), GateError: c.GateError, Payload: c.Payload, ResumeSchema: c.ResumeSchema,
		Approvers: []string{}, NotBy: who.NotBy, RequireReason: who.RequireReason, ApprovalsGiven: c.Approvals, CreatedAt: c.CreatedAt}
	if lists := who.Lists(); len(lists) > 0 {
		a.Approvers, a.AlsoApprovers = lists[0], lists[1:]
	}
	if a.Path == nil {
		a.Path = []string{run.Agent}
	}
	if c.Status == store.CallInterrupted {
		a.Kind = string(store.KindInterrupted)
	}
	if a.Kind == string(store.KindApproval) {
		a.ApprovalsNeeded = max(c.Needed, 1)
	}
	g := c.Gate // its preview is shown apart: docs/previews.md
	if g.Preview != nil {
		a.Preview, _ = jsonOf(g.Preview)
	}
	if g.Drift != nil {
		a.PreviewDrift, _ = jsonOf(g.Drift)
	}
	g.Preview, g.Drift = nil, nil
	if !g.Zero() {
		if b, err := jsonOf(g); err == nil {
			a.Gate = b
		}
	}
	if !c.Deadline.IsZero() {
		d := c.Deadline
		a.Deadline = &d
	}
	if esc, err := s.eng.Escalation(r.Context(), run, c); err != nil {
		return a, who, err
	} else if esc != nil {
		a.Escalation, _ = json.Marshal(esc)
	}
	up, act, err := s.eng.Uploaded(r.Context(), run, c)
	if err != nil {
		return a, who, err
	}
	if up != nil {
		a.Upload = &api.Upload{By: up.By, Digest: up.Digest, Every: up.Every}
		if act != nil {
			a.Action, _ = json.Marshal(act)
		}
	}
	return a, who, nil
}
