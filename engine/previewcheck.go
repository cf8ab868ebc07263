package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentctl/agentctl/engine/store"
)

// approvalData is what an approval of a previewed call records in its
// decision's data: the digest of the preview the approver was shown.
type approvalData struct {
	Preview string `json:"preview"`
}

// recheck runs a call's preview again just before the call runs, when
// its tool verifies previews (preview.verify) or an approval edited its
// arguments. A digest other than the one approved holds the call: it
// goes back to waiting for approval, with both previews, its approvals
// cleared, and a preview-drift event; held reports that. The call is
// approved, not executing, meanwhile: a process that dies here leaves
// it to be checked again.
func (rn *runner) recheck(ctx context.Context, t *toolNode, c *store.Call) (held bool, err error) {
	rec := c.Gate.Preview
	if t.preview == nil || rec == nil || c.Gate.Verdict != store.GateRequired || c.Status != store.CallApproved {
		return false, nil
	}
	edited := argsDigest(c.Args) != rec.ArgsDigest
	if !t.decl.Preview.Verify && !edited {
		return false, nil
	}
	approved, err := rn.approvedDigest(ctx, c)
	if err != nil {
		return false, err
	}
	now := rn.e.runPreview(ctx, t, rn.r, c)
	if !edited && now.Digest == approved {
		return false, nil
	}
	cause := "output"
	if edited {
		cause = "arguments"
	}
	g := c.Gate
	g.Preview, g.Drift = now, &store.Drift{Cause: cause, Approved: *rec}
	m := store.Move{RunID: rn.r.ID, CallID: c.ID, From: c.Status, To: store.CallPending, Kind: store.KindApproval,
		Deadline: rn.e.deadline(rn.a, t.decl), Gate: &g}
	fields := ToolCallApproval{CallID: c.ID, Tool: c.Tool, Args: c.Args, Gate: g, GateError: c.GateError}
	if !m.Deadline.IsZero() {
		fields.Deadline = &m.Deadline
	}
	drift := PreviewDriftEvent{Approved: approved, CallID: c.ID, Cause: cause, Found: now.Digest, Tool: c.Tool}
	if err := rn.write(ctx, store.Writes{Moves: []store.Move{m}}, 0, event(rn.r, drift), event(rn.r, fields)); err != nil {
		return false, err
	}
	c.Status, c.Kind, c.Gate, c.Deadline, c.Approvals = store.CallPending, store.KindApproval, g, m.Deadline, 0
	return true, nil
}

// approvedDigest is the digest of the preview the call's last approval
// was of, as its decision recorded it; else the preview on the call.
func (rn *runner) approvedDigest(ctx context.Context, c *store.Call) (string, error) {
	ds, err := rn.e.store.Decisions(ctx, c.RunID)
	if err != nil {
		return "", err
	}
	for i := len(ds) - 1; i >= 0; i-- {
		d := ds[i]
		if d.CallID != c.ID || d.Action != store.Approve {
			continue
		}
		var data approvalData
		if json.Unmarshal(d.Data, &data) == nil && data.Preview != "" {
			return data.Preview, nil
		}
		break
	}
	return c.Gate.Preview.Digest, nil
}

// previewRefusal says why an approval of a call is refused for its
// preview: its tool's preview.required, and a preview that failed or
// timed out. The preview is run again first, and what it shows now
// recorded on the call: one that now succeeds is still refused, for
// the approver to see it before approving. "" when none is refused.
func (e *Engine) previewRefusal(ctx context.Context, g *Graph, r *store.Run, c *store.Call, d Decision) (string, error) {
	rec := c.Gate.Preview
	if d.Action != store.Approve || rec == nil || rec.Status == store.PreviewOK {
		return "", nil
	}
	a, ok := g.agents[r.Agent]
	if !ok {
		return "", nil
	}
	tn, err := a.tool(ctx, c.Tool)
	if err != nil || tn == nil || tn.preview == nil || !tn.decl.Preview.Required {
		return "", err
	}
	now := e.runPreview(ctx, tn, r, c)
	regated := c.Gate
	regated.Preview = now
	if err := e.store.Regate(ctx, r.ID, c.ID, c.Gate, regated); err != nil {
		return "", err
	}
	c.Gate = regated
	if now.Status == store.PreviewOK {
		return fmt.Sprintf("its preview %s before (%s); it was run again and now shows what the call would do: review it (agentctl show %s) and approve again",
			rec.Status, rec.Error, r.ID), nil
	}
	return fmt.Sprintf("its preview %s (%s), and its tool's preview.required allows no approval without one; each approval runs it again first",
		now.Status, now.Error), nil
}

// pendingGate is a pending call's gate for a view, with its preview and
// drift apart: shown on their own (PendingView.Preview).
func pendingGate(c *store.Call) (*store.Gate, *store.Preview, *store.Drift) {
	g := c.Gate
	p, d := g.Preview, g.Drift
	g.Preview, g.Drift = nil, nil
	if g.Zero() {
		return nil, p, d
	}
	return &g, p, d
}

// PreviewChangedError reports an approval of a preview that is no longer
// the call's: the approver saw Seen, the call shows Now. Nothing was
// decided; it matches store.ErrConflict (exit 4, 409).
type PreviewChangedError struct {
	RunID, CallID string
	Seen, Now     string // digests; Now "" when the call has no preview
}

func (e *PreviewChangedError) Error() string {
	now := e.Now
	if now == "" {
		now = "none"
	}
	return fmt.Sprintf("call %s of run %s: its preview changed since you saw it (you saw %s, it is now %s): nothing was decided; look again (agentctl show %s) and approve what it shows",
		e.CallID, e.RunID, e.Seen, now, e.RunID)
}

// Is makes a *PreviewChangedError match store.ErrConflict.
func (e *PreviewChangedError) Is(target error) bool { return target == store.ErrConflict }

// previewSeen refuses an approval of calls whose preview is not the one
// decision d says its approver saw.
func previewSeen(calls []*store.Call, d Decision) error {
	if d.Action != store.Approve || d.Preview == "" {
		return nil
	}
	for _, c := range calls {
		now := ""
		if c.Gate.Preview != nil {
			now = c.Gate.Preview.Digest
		}
		if now != d.Preview {
			return &PreviewChangedError{RunID: c.RunID, CallID: c.ID, Seen: d.Preview, Now: now}
		}
	}
	return nil
}
