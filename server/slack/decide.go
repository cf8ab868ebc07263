package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/notify"
	"github.com/agentctl/agentctl/server"
)

// decision is what a press or a form asks of one call.
type decision struct {
	action    store.Action
	run, call string
	reason    string
	// trigger is the press's trigger_id: an approval refused for want of
	// a reason opens ApproveView's form with it.
	trigger string
}

// message is the Slack message a decision was made from, to update.
type message struct {
	Channel, TS, Text string
	Blocks            json.RawMessage
	ResponseURL       string
	runID, callID     string // what the decision was about
}

// outcome is what a decision came to, for the message.
type outcome struct {
	status string // the message's status line
	keep   bool   // the call still waits: the buttons stay
	// refused: the policy refused the one who pressed, who is told
	// privately; the message keeps its status, with the refusal added.
	refused bool
	// reason: refused for want of a reason (the tool's requireReason);
	// nothing was recorded.
	reason bool
	tool   string // the call's tool, when the server said
}

// decideThenAnswer makes the decision in the background as user, waits
// for it while the request's budget (Ack) lasts, and acknowledges; the
// message is updated once the decision has its outcome, after the
// acknowledgement if need be.
func (h *handler) decideThenAnswer(w http.ResponseWriter, r *http.Request, user string, d decision, m message) {
	decided := make(chan struct{})
	h.s.Go(func(ctx context.Context) {
		o := h.decide(ctx, user, d)
		close(decided)
		if o.reason && d.action == store.Approve && d.trigger != "" {
			// The tool asks a reason: the form asks it, its submission approves.
			h.openForm(ctx, "Approve", notify.ApproveView, d.trigger, m)
			return
		}
		if o.refused {
			h.ephemeral(m.ResponseURL, o.status)
		}
		h.update(ctx, d, m, o)
	})
	select {
	case <-decided:
	case <-r.Context().Done():
	}
	w.WriteHeader(http.StatusOK)
}

// decide makes d as user through the server's /v1 route, as the API
// does, and says what came of it.
func (h *handler) decide(ctx context.Context, user string, d decision) outcome {
	p := h.s.Person(ctx, user, server.ViaSlack)
	body := api.DecisionRequest{Call: d.call, Reason: d.reason}
	path := "/v1/runs/" + url.PathEscape(d.run) + "/" + string(d.action) + "?wait=0s"
	status, b, err := h.s.Call(ctx, p, http.MethodPost, path, body)
	verb := map[store.Action]string{store.Approve: "approval", store.Decline: "decline"}[d.action]
	if err != nil {
		return outcome{status: fmt.Sprintf("%s's %s could not be recorded (%v): press again", user, verb, err), keep: true}
	}
	h.o.Log.Info("slack decision", "user", user, "action", string(d.action), "run", d.run, "call", d.call, "status", status)
	if status/100 == 2 {
		return decided(user, d, b)
	}
	var e api.ErrorBody
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	switch {
	case status == http.StatusBadRequest && slices.ContainsFunc(e.Error.Details, func(d api.Detail) bool { return d.Pointer == "/reason" }):
		return outcome{status: fmt.Sprintf("%s's %s was not recorded: %s", user, verb, msg), keep: true, refused: true, reason: true}
	case status == http.StatusForbidden:
		return outcome{status: fmt.Sprintf("%s's %s was refused: %s", user, verb, msg), keep: true, refused: true}
	case status == http.StatusConflict || status == http.StatusNotFound:
		return outcome{status: fmt.Sprintf("Not decided by %s: %s", user, msg)}
	case status >= 500 || status == http.StatusTooManyRequests:
		return outcome{status: fmt.Sprintf("%s's %s could not be recorded (%s): press again", user, verb, msg), keep: true}
	}
	return outcome{status: fmt.Sprintf("%s's %s was refused: %s", user, verb, msg), keep: true}
}

// decided is the outcome of a decision the server took: who decided,
// and whether the call waits for more approvals.
func decided(user string, d decision, b []byte) outcome {
	var v struct {
		Calls []struct {
			CallID string `json:"callId"`
			Tool   string `json:"tool"`
		} `json:"calls"`
		Pending []struct {
			CallID    string `json:"callId"`
			RunID     string `json:"runId"`
			Needed    int    `json:"approvalsNeeded"`
			Approvals int    `json:"approvals"`
		} `json:"pending"`
	}
	json.Unmarshal(b, &v)
	tool := ""
	for _, c := range v.Calls {
		if c.CallID == d.call {
			tool = c.Tool
		}
	}
	if d.action == store.Decline {
		why := ""
		if d.reason != "" {
			why = ": " + d.reason
		}
		return outcome{status: "Declined by " + user + " via Slack" + why, tool: tool}
	}
	for _, pc := range v.Pending {
		if pc.CallID == d.call { // ids are unique in a tree
			return outcome{status: fmt.Sprintf("Approved by %s via Slack: %d of %d approvals, waiting for more", user, pc.Approvals, pc.Needed), keep: true, tool: tool}
		}
	}
	return outcome{status: "Approved by " + user + " via Slack", tool: tool}
}

// update shows o on the message: in place through the bot when its
// channel and ts are known, else through its response_url.
func (h *handler) update(ctx context.Context, d decision, m message, o outcome) {
	blocks, err := statusBlocks(m, o)
	if err != nil {
		h.o.Log.Warn("slack: the message's blocks", "run", d.run, "call", d.call, "error", err.Error())
		return
	}
	text := notify.SlackEscape(o.status, 3000) // the fallback text is mrkdwn too: no reason may mention a channel
	if m.Channel != "" && m.TS != "" {
		err = h.o.Bot.Update(ctx, m.Channel, m.TS, text, blocks)
	} else if m.ResponseURL != "" {
		err = h.o.Bot.Replace(ctx, m.ResponseURL, text, blocks)
	}
	if err != nil {
		h.o.Log.Warn("slack: update the message", "run", d.run, "call", d.call, "error", err.Error())
	}
}

// statusBlocks is the message's blocks with o's status line (and its
// buttons only while the call waits); a message whose blocks are not
// known (a form sent to another server) is the status line alone.
func statusBlocks(m message, o outcome) (json.RawMessage, error) {
	blocks := m.Blocks
	if len(blocks) == 0 || string(blocks) == "null" {
		// Only where the message is, not what it showed: say what the
		// decision was about.
		what := "call `" + notify.SlackEscape(m.callID, 200) + "` of run `" + notify.SlackEscape(m.runID, 100) + "`"
		if o.tool != "" {
			what = "*" + notify.SlackEscape(o.tool, 200) + "*, " + what
		}
		b, _ := json.Marshal([]map[string]any{{"type": "section", "text": map[string]string{"type": "mrkdwn", "text": what}}})
		blocks = b
		o.keep = false // no buttons to keep
	}
	if o.refused {
		if prev := previousStatus(blocks); prev != "" {
			o.status = prev + "\n" + o.status // the call's progress stays in view
		}
	}
	return notify.DecidedBlocks(blocks, o.status, o.keep)
}

// previousStatus is the status line a message shows, as text, "" for
// none; its oldest lines go once it holds five.
func previousStatus(blocks json.RawMessage) string {
	var bs []struct {
		BlockID  string `json:"block_id"`
		Elements []struct {
			Text string `json:"text"`
		} `json:"elements"`
	}
	if json.Unmarshal(blocks, &bs) != nil {
		return ""
	}
	for _, b := range bs {
		if b.BlockID == notify.StatusBlockID && len(b.Elements) > 0 {
			text := strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(b.Elements[0].Text)
			lines := strings.Split(text, "\n")
			return strings.Join(lines[max(0, len(lines)-4):], "\n")
		}
	}
	return ""
}

// messages remembers, for a while, the messages whose Decline was
// pressed: the form's submission does not carry them, and the update
// keeps what they showed.
type messages struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]cached
}

type cached struct {
	msg message
	at  time.Time
}

// Limits of the cache of messages.
const (
	cacheFor = 30 * time.Minute // Slack's response_url lasts as long
	cacheMax = 1000
)

func newMessages(now func() time.Time) *messages {
	return &messages{now: now, m: map[string]cached{}}
}

func (c *messages) put(m message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for k, v := range c.m {
		if now.Sub(v.at) > cacheFor || len(c.m) >= cacheMax {
			delete(c.m, k)
		}
	}
	c.m[m.Channel+"\x00"+m.TS] = cached{msg: m, at: now}
}

// get returns the message at channel and ts, or one that knows only
// where it is.
func (c *messages) get(channel, ts string) message {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[channel+"\x00"+ts]; ok && c.now().Sub(v.at) <= cacheFor {
		return v.msg
	}
	return message{Channel: channel, TS: ts}
}
