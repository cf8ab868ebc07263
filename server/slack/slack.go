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
	"strings"
	"time"

	"golang.org/x/time/rate"

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
	// Ack bounds what is done before Slack is answered, from the request's
	// arrival: the replay record and the decision's commit (default
	// 2.5s; Slack waits 3s). What is left goes on after the answer.
	Ack time.Duration
}

// Limits of a request.
const (
	maxBody = 1 << 20 // an interaction payload echoes the message: well under this
	// replayWindow is how long a request's signature is remembered:
	// longer than the five minutes either way a timestamp may be off.
	replayWindow = 11 * time.Minute
	// storeWait bounds the replay record's write: a busy database must
	// not keep Slack past its three seconds.
	storeWait = 1500 * time.Millisecond
)

// handler serves POST /slack/interactions.
type handler struct {
	o        Options
	s        *server.Server
	cache    *messages
	failures *rate.Limiter // refused requests: 401 while it allows, 429 beyond
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
		o.Ack = 2500 * time.Millisecond
	}
	return func(s *server.Server) http.Handler {
		return &handler{o: o, s: s, cache: newMessages(o.Now), failures: rate.NewLimiter(10, 50)}
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
	ctx, cancel := context.WithTimeout(r.Context(), h.o.Ack) // Slack's three seconds, with room
	defer cancel()
	r = r.WithContext(ctx)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "the request is too large or was cut short", http.StatusRequestEntityTooLarge)
		return
	}
	now := h.o.Now()
	if err := notify.VerifySlack(h.o.SigningSecret, r.Header, body, now); err != nil {
		h.refuse(w, r, err.Error())
		return
	}
	// The replay record holds the signature's bytes: hex in upper case,
	// which the check accepts too, is the same signature.
	mac, _ := hex.DecodeString(strings.TrimPrefix(strings.ToLower(r.Header.Get("X-Slack-Signature")), "v0="))
	sum := sha256.Sum256(mac)
	sctx, cancel := context.WithTimeout(r.Context(), storeWait)
	fresh, err := h.o.Store.FirstSeen(sctx, "slack:"+hex.EncodeToString(sum[:]), now, now.Add(-replayWindow))
	cancel()
	if err != nil {
		h.o.Log.Warn("slack interaction: replay record", "error", err.Error())
		http.Error(w, "the store is busy or unavailable: nothing was done; press again", http.StatusServiceUnavailable)
		return
	}
	if !fresh {
		h.refuse(w, r, "a replay of a request already seen")
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

// refuse answers a request that is not Slack's (401), logging it unless
// such requests come faster than failures allows.
func (h *handler) refuse(w http.ResponseWriter, r *http.Request, why string) {
	if !h.failures.Allow() {
		http.Error(w, "too many refused requests", http.StatusTooManyRequests)
		return
	}
	h.o.Log.Warn("slack interaction refused", "error", why, "remote", r.RemoteAddr)
	http.Error(w, "refused: "+why, http.StatusUnauthorized)
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
	m.runID, m.callID = run, call
	if a.ActionID == notify.DeclineActionID {
		trigger := p.TriggerID
		h.s.Go(func(ctx context.Context) { h.openForm(ctx, "Decline", notify.DeclineView, trigger, m) })
		w.WriteHeader(http.StatusOK)
		return
	}
	h.decideThenAnswer(w, r, who, decision{action: store.Approve, run: run, call: call, trigger: p.TriggerID}, m)
}

// openForm opens the form view makes (DeclineView, ApproveView) for the
// call of m, with trigger, carrying m to the submission; a failure is
// told privately.
func (h *handler) openForm(ctx context.Context, verb string, view func(value, metadata string) json.RawMessage, trigger string, m message) {
	h.cache.put(m)
	value := notify.ActionValue(m.runID, m.callID)
	b, _ := json.Marshal(metadata{Value: value, Channel: m.Channel, TS: m.TS, ResponseURL: m.ResponseURL})
	if err := h.o.Bot.OpenView(ctx, trigger, view(value, string(b))); err != nil {
		h.o.Log.Warn("slack: open the "+strings.ToLower(verb)+" form", "run", m.runID, "call", m.callID, "error", err.Error())
		h.ephemeral(m.ResponseURL, "The "+verb+" form could not be opened ("+err.Error()+"): nothing was decided; press "+verb+" again.")
	}
}

// submit is the Decline form, or the Approve form of a tool that asks a
// reason, sent: the call is decided with its reason.
func (h *handler) submit(w http.ResponseWriter, r *http.Request, p *payload) {
	action := map[string]store.Action{notify.DeclineCallbackID: store.Decline, notify.ApproveCallbackID: store.Approve}[p.View.CallbackID]
	if action == "" {
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
	m.ResponseURL, m.runID, m.callID = meta.ResponseURL, run, call
	h.decideThenAnswer(w, r, who, decision{action: action, run: run, call: call, reason: notify.DeclineReason(p.View.State.Values)}, m)
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
