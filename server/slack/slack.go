// Package slack takes decisions from Slack: the Approve and Decline
// buttons of the approval messages agentctl serve posts through a Slack
// app (notify.Bot), and the form Decline opens for a reason.
//
// Trust: Slack signs each request to POST /slack/interactions with the
// app's signing secret, and vouches for the user id in it; a request
// whose signature is wrong, whose timestamp is more than five minutes
// off, or which was seen before (by any server on the database) is
// refused with 401 and changes nothing. The user id is mapped to an
// agentctl user by the server's configuration only (slack.users), never
// by a name or e-mail the request carries, and the decision is that
// user's, made through the server's own /v1 routes (server.Server.Call)
// with via "slack": the same roles, approver policy, four-eyes rule,
// separation of duties, audit and race guarantees as the API, the CLI
// and the inbox. The handler answers within Slack's three seconds and
// finishes the work (the message's update, the form) after.
package slack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/notify"
	"github.com/agentctl/agentctl/server"
)

// Options configure the interactions handler.
type Options struct {
	// SigningSecret is the Slack app's signing secret (its value).
	SigningSecret string
	// Bot updates messages and opens the Decline form.
	Bot notify.Bot
	// Users maps Slack user ids to agentctl users.
	Users map[string]string
	// Store records the requests seen, for replays.
	Store store.ServerStore
	Log   *slog.Logger
	Now   func() time.Time
	// Ack is how long a press waits for its decision to be committed
	// before Slack is answered (default 2s; Slack waits 3s).
	Ack time.Duration
}

// Limits of a request.
const (
	maxBody = 1 << 20 // an interaction payload echoes the message: well under this
	// replayWindow is how long a request's signature is remembered:
	// longer than the five minutes either way a timestamp may be off.
	replayWindow = 11 * time.Minute
)

// handler serves POST /slack/interactions.
type handler struct {
	o     Options
	s     *server.Server
	cache *messages
}

// New returns the handler of Slack's interactions, for
// server.Options.Slack.
func New(o Options) func(*server.Server) http.Handler {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Ack <= 0 {
		o.Ack = 2 * time.Second
	}
	return func(s *server.Server) http.Handler {
		return &handler{o: o, s: s, cache: newMessages(o.Now)}
	}
}

// payload is what this handler reads of an interaction payload
// (https://api.slack.com/reference/interaction-payloads).
type payload struct {
	Type string `json:"type"` // block_actions or view_submission
	User struct {
		ID string `json:"id"`
	} `json:"user"`
	TriggerID   string `json:"trigger_id"`
	ResponseURL string `json:"response_url"`
	Container   struct {
		ChannelID string `json:"channel_id"`
		MessageTS string `json:"message_ts"`
	} `json:"container"`
	Channel struct {
		ID string `json:"id"`
	} `json:"channel"`
	Message struct {
		TS     string          `json:"ts"`
		Text   string          `json:"text"`
		Blocks json.RawMessage `json:"blocks"`
	} `json:"message"`
	Actions []struct {
		ActionID string `json:"action_id"`
		Value    string `json:"value"`
	} `json:"actions"`
	View struct {
		CallbackID      string `json:"callback_id"`
		PrivateMetadata string `json:"private_metadata"`
		State           struct {
			Values json.RawMessage `json:"values"`
		} `json:"state"`
	} `json:"view"`
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "the request is too large or was cut short", http.StatusRequestEntityTooLarge)
		return
	}
	now := h.o.Now()
	if err := notify.VerifySlack(h.o.SigningSecret, r.Header, body, now); err != nil {
		h.o.Log.Warn("slack interaction refused", "error", err.Error(), "remote", r.RemoteAddr)
		http.Error(w, "refused: "+err.Error(), http.StatusUnauthorized)
		return
	}
	sum := sha256.Sum256([]byte(r.Header.Get("X-Slack-Signature")))
	fresh, err := h.o.Store.FirstSeen(r.Context(), "slack:"+hex.EncodeToString(sum[:]), now, now.Add(-replayWindow))
	if err != nil {
		h.o.Log.Warn("slack interaction: replay record", "error", err.Error())
		http.Error(w, "the store is unavailable: nothing was done", http.StatusServiceUnavailable)
		return
	}
	if !fresh {
		h.o.Log.Warn("slack interaction refused", "error", "a replay of a request already seen", "remote", r.RemoteAddr)
		http.Error(w, "refused: a replay of a request already seen", http.StatusUnauthorized)
		return
	}
	form, err := url.ParseQuery(string(body))
	var p payload
	if err == nil {
		err = json.Unmarshal([]byte(form.Get("payload")), &p)
	}
	if err != nil {
		http.Error(w, "not an interaction payload", http.StatusBadRequest)
		return
	}
	switch p.Type {
	case "block_actions":
		h.press(w, r, &p)
	case "view_submission":
		h.submit(w, r, &p)
	default:
		w.WriteHeader(http.StatusOK) // nothing this app asked for: acknowledged, ignored
	}
}

// press is a button: Approve decides at once, Decline opens the form
// that asks why.
func (h *handler) press(w http.ResponseWriter, r *http.Request, p *payload) {
	if len(p.Actions) == 0 || (p.Actions[0].ActionID != notify.ApproveActionID && p.Actions[0].ActionID != notify.DeclineActionID) {
		w.WriteHeader(http.StatusOK) // a link button, or not ours
		return
	}
	a := p.Actions[0]
	m := message{Channel: p.Container.ChannelID, TS: p.Container.MessageTS, Blocks: p.Message.Blocks, Text: p.Message.Text, ResponseURL: p.ResponseURL}
	if m.Channel == "" {
		m.Channel = p.Channel.ID
	}
	if m.TS == "" {
		m.TS = p.Message.TS
	}
	who, ok := h.user(p)
	if !ok {
		w.WriteHeader(http.StatusOK)
		return
	}
	run, call, err := notify.ParseActionValue(a.Value)
	if err != nil {
		h.ephemeral(p.ResponseURL, "This button decides nothing: it is not one agentctl made.")
		w.WriteHeader(http.StatusOK)
		return
	}
	if a.ActionID == notify.DeclineActionID {
		h.cache.put(m)
		meta := metadata{Value: a.Value, Channel: m.Channel, TS: m.TS, ResponseURL: m.ResponseURL}
		b, _ := json.Marshal(meta)
		trigger := p.TriggerID
		h.s.Go(func(ctx context.Context) {
			if err := h.o.Bot.OpenView(ctx, trigger, notify.DeclineView(a.Value, string(b))); err != nil {
				h.o.Log.Warn("slack: open the decline form", "run", run, "call", call, "error", err.Error())
				h.ephemeral(m.ResponseURL, "The Decline form could not be opened ("+err.Error()+"): nothing was decided; press Decline again.")
			}
		})
		w.WriteHeader(http.StatusOK)
		return
	}
	h.decideThenAnswer(w, who, decision{action: store.Approve, run: run, call: call}, m)
}

// submit is the Decline form sent: the call is declined with its reason.
func (h *handler) submit(w http.ResponseWriter, r *http.Request, p *payload) {
	if p.View.CallbackID != notify.DeclineCallbackID {
		w.WriteHeader(http.StatusOK)
		return
	}
	var meta metadata
	if err := json.Unmarshal([]byte(p.View.PrivateMetadata), &meta); err != nil {
		http.Error(w, "the form's metadata is not agentctl's", http.StatusBadRequest)
		return
	}
	run, call, err := notify.ParseActionValue(meta.Value)
	if err != nil {
		http.Error(w, "the form's metadata is not agentctl's", http.StatusBadRequest)
		return
	}
	p.ResponseURL = meta.ResponseURL
	who, ok := h.user(p)
	if !ok {
		w.WriteHeader(http.StatusOK)
		return
	}
	m := h.cache.get(meta.Channel, meta.TS)
	m.ResponseURL = meta.ResponseURL
	h.decideThenAnswer(w, who, decision{action: store.Decline, run: run, call: call, reason: notify.DeclineReason(p.View.State.Values)}, m)
}

// metadata is what the Decline form carries from the press to the
// submission (its private_metadata).
type metadata struct {
	Value       string `json:"v"`
	Channel     string `json:"c,omitempty"`
	TS          string `json:"t,omitempty"`
	ResponseURL string `json:"r,omitempty"`
}

// user is the agentctl user the Slack user of p maps to; one unmapped
// is told so, privately, and nothing is decided.
func (h *handler) user(p *payload) (string, bool) {
	name, ok := h.o.Users[p.User.ID]
	if !ok || name == "" {
		h.o.Log.Warn("slack: a press by an unmapped user", "slackUser", p.User.ID)
		h.ephemeral(p.ResponseURL, "Your Slack account ("+p.User.ID+") is not mapped to an agentctl user, so this decided nothing. "+
			"Ask the server's operator to add it under slack.users in its configuration.")
		return "", false
	}
	return name, true
}

// ephemeral tells the one who pressed text, in the background.
func (h *handler) ephemeral(responseURL, text string) {
	if responseURL == "" {
		return
	}
	h.s.Go(func(ctx context.Context) {
		if err := h.o.Bot.Ephemeral(ctx, responseURL, notify.SlackEscape(text, 3000)); err != nil {
			h.o.Log.Warn("slack: answer the one who pressed", "error", err.Error())
		}
	})
}
