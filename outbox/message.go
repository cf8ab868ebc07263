package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/notify"
)

// message is what the notification of event ev, of type ty, of run r
// says: the call it is about as stored (its arguments redacted as every
// stored call's are), who may decide it and why, the inbox link and the
// command.
func (b *Outbox) message(ctx context.Context, ev *store.Event, ty notify.Type, r *store.Run, callID string) (*notify.Message, error) {
	path := r.Path
	if len(path) == 0 {
		path = []string{r.Agent}
	}
	m := &notify.Message{Type: ty, At: ev.At, Run: notify.Run{ID: r.ID, RootID: r.RootID, Agent: r.Agent, Path: path, Status: string(r.Status)}}
	switch ty {
	case notify.Approval, notify.Suspend, notify.Escalated:
		m.Run.Status = string(store.Suspended) // as of the event, whatever came after
	case notify.Completed:
		m.Run.Status, m.Output = string(store.Completed), r.Output
	case notify.Failed:
		m.Run.Status, m.Error = string(store.Failed), r.Error
	}
	m.URL = b.link(r.ID, callID)
	if ty == notify.Escalated {
		m.Escalation = stepOf(ev)
	}
	if callID == "" {
		return m, nil
	}
	calls, err := b.o.Store.Calls(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	var c *store.Call
	for _, x := range calls {
		if x.ID == callID {
			c = x
		}
	}
	if c == nil {
		return nil, fmt.Errorf("call %s of run %s is not stored", callID, r.ID)
	}
	m.Call = &notify.Call{ID: c.ID, Tool: c.Tool, Args: c.Args, Kind: string(c.Kind), ApprovalsNeeded: c.Needed,
		ApprovalsGiven: c.Approvals, Payload: orNil(c.Payload), ResumeSchema: orNil(c.ResumeSchema)}
	if ty == notify.Approval {
		m.Call.ApprovalsNeeded = max(c.Needed, 1)
	}
	if p := c.Gate.Preview; p != nil {
		m.Call.Preview = &notify.Preview{Status: string(p.Status), Output: p.Output, Error: p.Error, Digest: p.Digest}
		if d := c.Gate.Drift; d != nil {
			m.Call.Preview.Drift = d.Cause
		}
	}
	if !c.Deadline.IsZero() {
		d := c.Deadline
		m.Call.Deadline = &d
	}
	if b.o.Describe != nil {
		if err := b.o.Describe(ctx, r, c, m.Call); err != nil {
			return nil, err
		}
	}
	m.Command = command(ty, b.cli(), r.ID, c)
	return m, nil
}

// link is the inbox page of a run, at its call.
func (b *Outbox) link(runID, callID string) string {
	if b.o.PublicURL == "" {
		return ""
	}
	u := strings.TrimRight(b.o.PublicURL, "/") + "/runs/" + url.PathEscape(runID)
	if callID != "" {
		u += "#call-" + url.PathEscape(runID) + "-" + url.PathEscape(callID) // the call's form on the page
	}
	return u
}

// cli is how a notification's command begins: through the server at
// PublicURL when there is one (its inbox is there too), else against
// the database the reader's agentctl uses.
func (b *Outbox) cli() string {
	u := strings.TrimRight(b.o.PublicURL, "/")
	if u == "" {
		return "agentctl"
	}
	if strings.Trim(u, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+=,-") != "" {
		u = "'" + strings.ReplaceAll(u, "'", `'\''`) + "'"
	}
	return "agentctl --server " + u
}

// command is the CLI command, beginning as cli, that decides a call (or
// shows it, once decided).
func command(ty notify.Type, cli, runID string, c *store.Call) string {
	switch ty {
	case notify.Approval, notify.Escalated:
		if c.Status != store.CallPending {
			break // decided by its step: shown
		}
		return cli + " approve " + runID + " --call " + c.ID
	case notify.Suspend:
		return cli + " resume " + runID + " --call " + c.ID + " --data '{...}'"
	}
	return cli + " show " + runID
}

// decode reads a stored notification's message.
func decode(n *store.Notification) (*notify.Message, error) {
	var m notify.Message
	if err := json.Unmarshal(n.Message, &m); err != nil {
		return nil, fmt.Errorf("notification %s: message: %w", n.ID, err)
	}
	m.ID = n.ID
	if m.Call != nil { // a nil value stored comes back as JSON null
		m.Call.Payload, m.Call.ResumeSchema = orNil(m.Call.Payload), orNil(m.Call.ResumeSchema)
	}
	if m.At.IsZero() {
		m.At = n.CreatedAt
	}
	return &m, nil
}

// Body is the JSON a stored notification sends to a webhook (and a
// command's stdin).
func Body(n *store.Notification) ([]byte, error) {
	m, err := decode(n)
	if err != nil {
		return nil, err
	}
	return m.Body(), nil
}

// orNil is a stored JSON value, nil for none (JSON null included).
func orNil(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return v
}
