package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// The ids Bot.Post's buttons and DeclineView's modal carry, which Slack
// sends back in the interaction payloads of a click or a submission.
const (
	ActionsBlockID    = "agentctl.actions" // the actions block of a posted message
	StatusBlockID     = "agentctl.status"  // the context block DecidedBlocks adds
	ApproveActionID   = "agentctl.approve" // the Approve button; its value is ActionValue's
	DeclineActionID   = "agentctl.decline" // the Decline button; its value is ActionValue's
	OpenActionID      = "agentctl.open"    // a suspension's link button "Open the form"
	DeclineCallbackID = "agentctl.decline" // the callback_id of DeclineView's modal
	ApproveCallbackID = "agentctl.approve" // the callback_id of ApproveView's modal
	ReasonBlockID     = "reason"           // the block_id of the modal's reason input
	ReasonActionID    = "reason"           // the action_id of the modal's reason input
)

// Slack's limits, in characters or items.
const (
	slackMaxBlocks   = 50   // blocks of a message
	slackURLMax      = 3000 // a button's url
	slackMetadataMax = 3000 // a view's private_metadata
	reasonMax        = 1000 // what DeclineView's input takes
)

// ErrBadActionValue is the error of ParseActionValue.
var ErrBadActionValue = errors.New("not an agentctl action value")

// validRunID reports whether s is a run id: 26 characters of Crockford
// base32, upper case. (Checked by hand: a regexp of counted repetitions
// compiles at start-up, in every command.)
func validRunID(s string) bool {
	if len(s) != 26 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' && c != 'I' && c != 'L' && c != 'O' && c != 'U') {
			return false
		}
	}
	return true
}

// validCallID reports whether s is a call id (1 to 64 of A-Z, a-z, 0-9,
// '_', '.' and '-'), or the path of one in its tree (call_2/call_1: up
// to 16 of them joined by '/').
func validCallID(s string) bool {
	parts := strings.Split(s, "/")
	if len(parts) > 16 {
		return false
	}
	for _, p := range parts {
		if len(p) == 0 || len(p) > 64 {
			return false
		}
		for i := 0; i < len(p); i++ {
			c := p[i]
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '.' || c == '-') {
				return false
			}
		}
	}
	return true
}

// ActionValue returns the value of the buttons that decide call callID
// of run runID: "RUNID/CALLID". ParseActionValue reads it back when
// runID is a run id (26 characters of Crockford base32, upper case) and
// callID a call id (1 to 64 of A-Z, a-z, 0-9, '_', '.' and '-'), or a
// call's path in its tree from the root (call_2/call_1).
func ActionValue(runID, callID string) string { return runID + "/" + callID }

// ParseActionValue returns the run and call ids of a value ActionValue
// made. Anything else (another shape, a run id that is not 26 characters
// of Crockford base32 upper case, a call id that does not match
// ^[A-Za-z0-9_.-]{1,64}$, or up to 16 of them joined by '/') is refused
// with an error wrapping
// ErrBadActionValue, which never holds v.
func ParseActionValue(v string) (runID, callID string, err error) {
	runID, callID, ok := strings.Cut(v, "/")
	switch {
	case !ok:
		return "", "", fmt.Errorf("%w: want RUNID/CALLID", ErrBadActionValue)
	case !validRunID(runID):
		return "", "", fmt.Errorf("%w: the run id is not 26 characters of Crockford base32", ErrBadActionValue)
	case !validCallID(callID):
		return "", "", fmt.Errorf("%w: the call id is not 1 to 64 letters, digits, '_', '.' or '-' (a path of them, in a tree)", ErrBadActionValue)
	}
	return runID, callID, nil
}

// SlackEscape returns s with &, < and > escaped as Slack's text asks, so
// that none of it becomes a link, a mention or markup, in at most limit
// characters (UTF-16 code units, an escape counting whole): longer text
// is cut and ends with "…". It is how this package writes any text of a
// notification into Slack's blocks.
func SlackEscape(s string, limit int) string { return fit(s, limit) }

// The JSON shapes of a Slack app's blocks and views.
type (
	slackButton struct {
		Type     string    `json:"type"` // button
		ActionID string    `json:"action_id"`
		Text     slackText `json:"text"`
		Value    string    `json:"value,omitempty"`
		URL      string    `json:"url,omitempty"`
		Style    string    `json:"style,omitempty"` // primary or danger
	}
	slackActions struct {
		Type     string        `json:"type"` // actions
		BlockID  string        `json:"block_id"`
		Elements []slackButton `json:"elements"`
	}
	slackContext struct {
		Type     string      `json:"type"` // context
		BlockID  string      `json:"block_id"`
		Elements []slackText `json:"elements"`
	}
	slackInput struct {
		Type     string     `json:"type"` // input
		BlockID  string     `json:"block_id"`
		Optional bool       `json:"optional"`
		Label    slackText  `json:"label"`
		Element  slackField `json:"element"`
	}
	slackField struct {
		Type      string `json:"type"` // plain_text_input
		ActionID  string `json:"action_id"`
		Multiline bool   `json:"multiline"`
		MaxLength int    `json:"max_length"`
	}
	slackView struct {
		Type            string    `json:"type"` // modal
		CallbackID      string    `json:"callback_id"`
		PrivateMetadata string    `json:"private_metadata"`
		Title           slackText `json:"title"`
		Submit          slackText `json:"submit"`
		Close           slackText `json:"close"`
		Blocks          []any     `json:"blocks"`
	}
)

func plain(s string) slackText { return slackText{Type: "plain_text", Text: s} }

// botBlocks returns the blocks Bot.Post sends for m: SlackBody's, and
// the actions block of m when it has one.
func botBlocks(m *Message) (text string, blocks []any) {
	msg := slackMessageOf(m)
	for _, b := range msg.Blocks {
		blocks = append(blocks, b)
	}
	if a := actionsOf(m); a != nil {
		blocks = append(blocks, a)
	}
	return msg.Text, blocks[:min(len(blocks), slackMaxBlocks)]
}

// actionsOf returns the actions block of m, nil when it has none: Approve
// and Decline for an approval whose run and call ids make an
// ActionValue, a link to the form for a suspension with an http(s) URL.
func actionsOf(m *Message) *slackActions {
	if m == nil {
		return nil
	}
	var buttons []slackButton
	switch m.Type {
	case Approval, Escalated:
		if m.Call == nil || m.decided() {
			return nil
		}
		run := m.Run.RootID // a call's id in a tree names it from its root, where a human sees them all
		if run == "" {
			run = m.Run.ID
		}
		v := ActionValue(run, m.Call.ID)
		if _, _, err := ParseActionValue(v); err != nil {
			return nil
		}
		buttons = []slackButton{
			{Type: "button", ActionID: ApproveActionID, Text: plain("Approve"), Value: v, Style: "primary"},
			{Type: "button", ActionID: DeclineActionID, Text: plain("Decline"), Value: v, Style: "danger"},
		}
	case Suspend:
		link := buttonURL(m.URL)
		if link == "" {
			return nil
		}
		buttons = []slackButton{{Type: "button", ActionID: OpenActionID, Text: plain("Open the form"), URL: link}}
	default:
		return nil
	}
	return &slackActions{Type: "actions", BlockID: ActionsBlockID, Elements: buttons}
}

// buttonURL returns raw as a link button's url, "" unless it is an
// http(s) URL of at most 3000 characters.
func buttonURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	s := strings.NewReplacer("<", "%3C", ">", "%3E", " ", "%20", `"`, "%22").Replace(u.String())
	if len(s) > slackURLMax {
		return ""
	}
	return s
}

// DeclineView returns the modal the Decline button opens (Bot.OpenView):
// callback_id DeclineCallbackID, title and submit "Decline", close
// "Cancel", private_metadata metadata as given (Slack takes at most 3000
// characters: the caller keeps it short), and an optional multi-line
// input of at most 1000 characters, block_id ReasonBlockID and action_id
// ReasonActionID, labelled "Why not (the model is told)". When value is
// an ActionValue, a context line under the input names the run and the
// call. DeclineReason reads the reason from the submission.
func DeclineView(value, metadata string) json.RawMessage {
	return reasonView(reasonModal{callback: DeclineCallbackID, verb: "Decline", doing: "Declining", label: "Why not (the model is told)", optional: true},
		value, metadata)
}

// ApproveView returns the modal the Approve button opens when the call's
// tool asks every decision for a reason (requireReason): DeclineView's,
// with callback_id ApproveCallbackID, title and submit "Approve", and a
// required input labelled "Why (the tool asks every decision for a
// reason)". DeclineReason reads the reason from the submission.
func ApproveView(value, metadata string) json.RawMessage {
	return reasonView(reasonModal{callback: ApproveCallbackID, verb: "Approve", doing: "Approving",
		label: "Why (the tool asks every decision for a reason)"}, value, metadata)
}

// reasonModal is what DeclineView's and ApproveView's modals differ in.
type reasonModal struct {
	callback, verb, doing, label string
	optional                     bool
}

func reasonView(m reasonModal, value, metadata string) json.RawMessage {
	blocks := []any{slackInput{
		Type: "input", BlockID: ReasonBlockID, Optional: m.optional,
		Label:   plain(m.label),
		Element: slackField{Type: "plain_text_input", ActionID: ReasonActionID, Multiline: true, MaxLength: reasonMax},
	}}
	if run, call, err := ParseActionValue(value); err == nil {
		blocks = append(blocks, slackContext{Type: "context", BlockID: "agentctl.call", Elements: []slackText{
			{Type: "mrkdwn", Text: m.doing + " call `" + call + "` of run `" + run + "`."},
		}})
	}
	return marshal(slackView{
		Type: "modal", CallbackID: m.callback, PrivateMetadata: metadata,
		Title: plain(m.verb), Submit: plain(m.verb), Close: plain("Cancel"),
		Blocks: blocks,
	})
}

// DeclineReason returns the reason typed into DeclineView's modal (or
// ApproveView's), given
// the view.state.values of Slack's view_submission payload; "" when it
// is absent, empty or stateValues is not such JSON.
func DeclineReason(stateValues json.RawMessage) string {
	var values map[string]map[string]struct {
		Value *string `json:"value"`
	}
	if json.Unmarshal(stateValues, &values) != nil {
		return ""
	}
	if v := values[ReasonBlockID][ReasonActionID].Value; v != nil {
		return *v
	}
	return ""
}

// DecidedBlocks returns a message's blocks after a decision, given them
// as Slack echoes them in an interaction payload (message.blocks, a JSON
// array of block objects): any earlier StatusBlockID block is removed; a
// context block StatusBlockID holding status (one mrkdwn element,
// escaped and cut to 3000 characters as SlackEscape does; no block when
// status is "") goes just before the actions block (ActionsBlockID), or
// last when there is none; and the actions block is kept only when keep
// is true (a call still waiting for another approval). When that makes
// more than 50 blocks, Slack's limit, blocks are dropped from the middle;
// the status and actions blocks are kept. Other blocks are returned as
// given. blocks that are not a JSON array of objects are an error.
func DecidedBlocks(blocks json.RawMessage, status string, keep bool) (json.RawMessage, error) {
	var in []json.RawMessage
	if !bytes.HasPrefix(bytes.TrimSpace(blocks), []byte("[")) || json.Unmarshal(blocks, &in) != nil {
		return nil, errors.New("the blocks are not a JSON array")
	}
	type item struct {
		raw    any
		pinned bool
	}
	var out []item
	placed := status == ""
	place := func() {
		if !placed {
			out = append(out, item{slackContext{Type: "context", BlockID: StatusBlockID, Elements: []slackText{{Type: "mrkdwn", Text: fit(status, slackSectionMax)}}}, true})
			placed = true
		}
	}
	for i, raw := range in {
		var b struct {
			BlockID string `json:"block_id"`
		}
		if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) || json.Unmarshal(raw, &b) != nil {
			return nil, fmt.Errorf("block %d is not a JSON object", i)
		}
		switch b.BlockID {
		case StatusBlockID:
			continue
		case ActionsBlockID:
			place()
			if keep {
				out = append(out, item{raw, true})
			}
			continue
		}
		out = append(out, item{raw, false})
	}
	place()
	out = dropMiddle(out, slackMaxBlocks, func(it item) bool { return it.pinned })
	list := make([]any, len(out))
	for i, it := range out {
		list[i] = it.raw
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(list); err != nil {
		return nil, errors.New("the blocks do not encode as JSON")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// dropMiddle returns s cut to at most n items by dropping, from the
// middle of those that are not pinned, as many as it must; pinned items
// always stay, in order.
func dropMiddle[T any](s []T, n int, pinned func(T) bool) []T {
	excess := len(s) - n
	if excess <= 0 {
		return s
	}
	var free []int // the indexes of items that may go
	for i, it := range s {
		if !pinned(it) {
			free = append(free, i)
		}
	}
	start := max((len(free)-excess)/2, 0)
	drop := map[int]bool{}
	for _, i := range free[start:min(start+excess, len(free))] {
		drop[i] = true
	}
	var out []T
	for i, it := range s {
		if !drop[i] {
			out = append(out, it)
		}
	}
	return out
}
