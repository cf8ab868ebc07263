package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultSlackAPI is where Bot calls Slack's Web API when its APIURL is
// empty.
const DefaultSlackAPI = "https://slack.com/api/"

const (
	maxSlackReply = 1 << 20 // bytes of a Slack answer read
	slackJSON     = "application/json; charset=utf-8"
	slackHooks    = "hooks.slack.com" // the host of an interaction's response_url
)

// Bot is a Slack app's bot user, calling Slack's Web API
// (https://api.slack.com/web) with its bot token: it posts messages with
// buttons to channels, updates them, opens modals and answers
// interactions. Every method makes one attempt, an HTTP POST of JSON
// that ends with ctx, or after DefaultTimeout when ctx has no deadline,
// and never follows a redirect. A failure is a *SendError named
// "slack api <host>" (or "slack response_url <host>") saying the method
// and Slack's error code: permanent (errors.Is(err, ErrPermanent)) when
// another attempt cannot succeed, with RetryAfter when Slack asked to
// wait. No error ever holds the token.
type Bot struct {
	// APIURL is the Web API's base, to which a method's name is added
	// (.../chat.postMessage), with or without a trailing slash; ""
	// means DefaultSlackAPI.
	APIURL string
	// Token is the bot token (xoxb-...), a secret: only ever sent in the
	// Authorization header of a call to APIURL.
	Token  string
	Client *http.Client // nil: a default client; its redirect policy is never used
}

// slackReply is the part of a Web API answer Bot reads.
type slackReply struct {
	OK               *bool  `json:"ok"`
	Error            string `json:"error"`
	TS               string `json:"ts"`
	Channel          string `json:"channel"`
	ResponseMetadata struct {
		Messages []string `json:"messages"`
	} `json:"response_metadata"`
}

// Post posts m to channel (a channel id such as C0123ABCD, or a name
// such as #ops, which the bot must be in) with chat.postMessage: the
// text and blocks SlackBody renders, and an actions block (block_id
// ActionsBlockID) when m has one. An approval whose m.Run.ID and
// m.Call.ID make a valid ActionValue gets the buttons Approve (action_id
// ApproveActionID, style primary) and Decline (DeclineActionID, style
// danger), both with that value; a suspension whose m.URL is an http(s)
// URL gets a link button "Open the form" (OpenActionID) to it. It
// returns the posted message's ts, with which Update edits it.
//
// Errors are classified as Bot says: HTTP 429 and Slack's ratelimited
// are retried after Retry-After; 5xx, 408, network errors, and Slack
// errors such as internal_error or one this package does not know are
// worth retrying; other HTTP statuses, redirects and errors such as
// channel_not_found, not_in_channel, invalid_auth or invalid_blocks are
// permanent.
func (b Bot) Post(ctx context.Context, channel string, m *Message) (ts string, err error) {
	switch {
	case m == nil:
		return "", b.refuse("chat.postMessage", "no message")
	case channel == "":
		return "", b.refuse("chat.postMessage", "no channel")
	}
	text, blocks := botBlocks(m)
	body := marshal(struct {
		Channel string `json:"channel"`
		Text    string `json:"text"`
		Blocks  []any  `json:"blocks"`
	}{channel, text, blocks})
	r, err := b.call(ctx, "chat.postMessage", body)
	if err != nil {
		return "", err
	}
	return r.TS, nil
}

// Update replaces the text and blocks of the message ts in channel with
// chat.update (Slack keeps the old blocks when blocks is empty). text is
// sent as given: Slack reads it as mrkdwn, so escape what must not
// become a link or a mention (SlackEscape). Errors are Post's, with
// message_not_found and cant_update_message permanent.
func (b Bot) Update(ctx context.Context, channel, ts, text string, blocks json.RawMessage) error {
	switch {
	case channel == "" || ts == "":
		return b.refuse("chat.update", "no channel or no ts")
	case !validBlocks(blocks):
		return b.refuse("chat.update", "the blocks are not valid JSON")
	}
	body := marshal(struct {
		Channel string          `json:"channel"`
		TS      string          `json:"ts"`
		Text    string          `json:"text"`
		Blocks  json.RawMessage `json:"blocks,omitempty"`
	}{channel, ts, text, compact(blocks)})
	_, err := b.call(ctx, "chat.update", body)
	return err
}

// OpenView opens view (a modal such as DeclineView's) for the user whose
// interaction gave triggerID, with views.open. A trigger_id is good for
// 3 seconds: expired_trigger_id and invalid_trigger_id are permanent.
func (b Bot) OpenView(ctx context.Context, triggerID string, view json.RawMessage) error {
	switch {
	case triggerID == "":
		return b.refuse("views.open", "no trigger_id")
	case len(bytes.TrimSpace(view)) == 0 || !validBlocks(view):
		return b.refuse("views.open", "the view is not valid JSON")
	}
	body := marshal(struct {
		TriggerID string          `json:"trigger_id"`
		View      json.RawMessage `json:"view"`
	}{triggerID, compact(view)})
	_, err := b.call(ctx, "views.open", body)
	return err
}

// Ephemeral answers an interaction with text (sent as given, read as
// mrkdwn) shown only to the user who acted: a POST to the interaction's
// response_url of {"response_type":"ephemeral","replace_original":false,
// "text":...}, without the token. responseURL must be https on
// hooks.slack.com, or on the scheme and host of APIURL; any other is
// refused, permanently, without a request.
func (b Bot) Ephemeral(ctx context.Context, responseURL, text string) error {
	return b.respond(ctx, responseURL, marshal(struct {
		ResponseType    string `json:"response_type"`
		ReplaceOriginal bool   `json:"replace_original"`
		Text            string `json:"text"`
	}{"ephemeral", false, text}))
}

// Replace replaces the message an interaction came from with text and
// blocks (such as DecidedBlocks returns): a POST to the interaction's
// response_url of {"replace_original":true,"text":...,"blocks":...},
// without the token. responseURL is checked as Ephemeral does.
func (b Bot) Replace(ctx context.Context, responseURL, text string, blocks json.RawMessage) error {
	if !validBlocks(blocks) {
		return &SendError{Target: "slack response_url", Permanent: true, Err: errors.New("respond: the blocks are not valid JSON")}
	}
	return b.respond(ctx, responseURL, marshal(struct {
		ReplaceOriginal bool            `json:"replace_original"`
		Text            string          `json:"text"`
		Blocks          json.RawMessage `json:"blocks,omitempty"`
	}{true, text, compact(blocks)}))
}

// validBlocks reports whether raw is empty or valid JSON.
func validBlocks(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || json.Valid(raw)
}

// compact returns raw, valid JSON or empty, on one line; nil when empty.
func compact(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if len(bytes.TrimSpace(raw)) == 0 || json.Compact(&buf, raw) != nil {
		return nil
	}
	return buf.Bytes()
}

// endpoint returns the URL of method and how errors name it.
func (b Bot) endpoint(method string) (*url.URL, string, error) {
	api := b.APIURL
	if strings.TrimSpace(api) == "" {
		api = DefaultSlackAPI
	}
	u, err := parseTarget(api)
	if err != nil {
		return nil, "slack api", fmt.Errorf("the API URL: %w", err)
	}
	return u.JoinPath(method), "slack api " + oneLine(u.Host, 200), nil
}

// refuse is the permanent error of a call to method that cannot be made.
func (b Bot) refuse(method, why string) error {
	_, name, _ := b.endpoint(method)
	return &SendError{Target: name, Permanent: true, Err: errors.New(method + ": " + why)}
}

// call makes one call of method with body and returns Slack's answer
// when ok.
func (b Bot) call(ctx context.Context, method string, body []byte) (*slackReply, error) {
	u, name, err := b.endpoint(method)
	if err != nil {
		return nil, &SendError{Target: name, Permanent: true, Err: fmt.Errorf("%s: %w", method, err)}
	}
	if !validToken(b.Token) {
		return nil, &SendError{Target: name, Permanent: true, Err: errors.New(method + ": the bot token is empty or holds a space, a control or a non-ASCII character")}
	}
	secrets := append(hidden(u, false), b.Token)
	h := http.Header{}
	h.Set("Content-Type", slackJSON)
	h.Set("Authorization", "Bearer "+b.Token)
	now := time.Now()
	resp, text, err := exchange(ctx, b.Client, u, h, body, maxSlackReply, name, secrets)
	if err != nil {
		return nil, inMethod(err, method)
	}
	return slackAnswer(resp, text, now, method, name, secrets, true)
}

// respond POSTs body to an interaction's response_url.
func (b Bot) respond(ctx context.Context, responseURL string, body []byte) error {
	u, err := parseTarget(responseURL)
	if err != nil {
		return &SendError{Target: "slack response_url", Permanent: true, Err: fmt.Errorf("respond: %w", err)}
	}
	name := "slack response_url " + oneLine(u.Host, 200)
	if !b.mayRespond(u) {
		return &SendError{Target: name, Permanent: true, Err: errors.New("respond: refused: a response_url must be https on " + slackHooks)}
	}
	secrets := hidden(u, true)
	if b.Token != "" {
		secrets = append(secrets, b.Token)
	}
	h := http.Header{}
	h.Set("Content-Type", slackJSON)
	now := time.Now()
	resp, text, err := exchange(ctx, b.Client, u, h, body, maxSlackReply, name, secrets)
	if err != nil {
		return inMethod(err, "respond")
	}
	_, err = slackAnswer(resp, text, now, "respond", name, secrets, false)
	return err
}

// mayRespond reports whether u may be an interaction's response_url:
// https on hooks.slack.com, or the scheme and host of the API URL.
func (b Bot) mayRespond(u *url.URL) bool {
	if u.Scheme == "https" && strings.EqualFold(u.Host, slackHooks) {
		return true
	}
	api, _, err := b.endpoint("")
	return err == nil && api.Scheme == u.Scheme && strings.EqualFold(api.Host, u.Host)
}

// validToken reports whether tok may go in a header: not empty, visible
// ASCII only.
func validToken(tok string) bool {
	for i := 0; i < len(tok); i++ {
		if tok[i] <= ' ' || tok[i] > '~' {
			return false
		}
	}
	return tok != ""
}

// inMethod prefixes the text of a *SendError's Err with method.
func inMethod(err error, method string) error {
	var e *SendError
	if errors.As(err, &e) && e.Err != nil {
		e.Err = fmt.Errorf("%s: %w", method, e.Err)
	}
	return err
}

// slackAnswer classifies Slack's answer to method: nil and the reply
// when it is 2xx and "ok" (or, unless needJSON, 2xx and not JSON), else
// a *SendError.
func slackAnswer(resp *http.Response, text []byte, now time.Time, method, name string, secrets []string, needJSON bool) (*slackReply, error) {
	if err := classify(resp, text, now, name, secrets); err != nil {
		return nil, inMethod(err, method)
	}
	var r slackReply
	if err := json.Unmarshal(text, &r); err != nil || (r.OK == nil && needJSON) {
		if !needJSON {
			return &r, nil
		}
		return nil, &SendError{Target: name, Status: resp.StatusCode, Err: errors.New(method + ": the answer is not Slack's JSON")}
	}
	if r.OK == nil || *r.OK {
		return &r, nil
	}
	code := oneLine(scrub(r.Error, secrets), 80)
	if code == "" {
		code = "not ok, no error given"
	}
	what := method + ": " + code
	if msgs := r.ResponseMetadata.Messages; len(msgs) > 0 {
		what += " (" + oneLine(scrub(msgs[0], secrets), 160) + ")"
	}
	e := &SendError{Target: name, Status: resp.StatusCode, Permanent: slackPermanent(r.Error), Err: errors.New(what)}
	if !e.Permanent {
		e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), now)
	}
	return nil, e
}

// slackPermanent reports whether Slack's error code says another attempt
// cannot succeed. Any code it does not know is worth retrying.
func slackPermanent(code string) bool {
	switch code {
	case "channel_not_found", "not_in_channel", "is_archived", "channel_is_archived",
		"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired",
		"missing_scope", "no_permission", "not_allowed_token_type", "team_access_not_granted",
		"ekm_access_denied", "two_factor_setup_required", "access_denied", "org_login_required",
		"method_deprecated", "deprecated_endpoint",
		"invalid_blocks", "invalid_blocks_format", "invalid_arguments", "invalid_arg_name",
		"invalid_array_arg", "invalid_charset", "invalid_form_data", "invalid_post_type",
		"missing_post_type", "invalid_json", "json_not_object", "too_many_attachments",
		"msg_too_long", "no_text", "restricted_action", "restricted_action_read_only_channel",
		"restricted_action_thread_only_channel", "restricted_action_non_threadable_channel",
		"message_not_found", "cant_update_message", "edit_window_closed",
		"expired_trigger_id", "invalid_trigger_id", "exchanged_trigger_id", "view_too_large",
		"duplicate_external_id", "expired_url", "used_url", "invalid_url", "no_such_url":
		return true
	}
	return false
}
