// Package notify sends agentctl's notifications: a call that waits for a
// human (approval, resume data), a waiting call that expired, a run that
// completed or failed. A Message is one notification's content, the same
// for every target; a target sends it once per call of its Send:
//
//   - Webhook POSTs Message.Body, signed per Standard Webhooks
//     (https://www.standardwebhooks.com/): a receiver checks it with
//     Verify and a key from ParseSecret.
//   - Slack POSTs a Block Kit message to a Slack incoming webhook.
//   - Bot posts it to a channel through a Slack app's bot, with Approve
//     and Decline buttons on an approval; VerifySlack checks the
//     interactions Slack sends back, and DeclineView, DecidedBlocks,
//     Bot.Replace and Bot.Ephemeral answer them.
//   - Command runs a program, no shell, with Body on its stdin.
//
// Sending is one attempt: retrying is the caller's. Every Send returns
// nil when the target took the notification, else a *SendError that says
// whether another attempt may succeed (errors.Is(err, ErrPermanent) when
// it cannot) and how long the target asked to wait before it.
//
// Nothing here panics on any input, and no error or log line holds a
// webhook key, a Slack URL's path, a bot token, a Slack signing secret,
// a URL's query string or userinfo, or the body of a request.
package notify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// Type is what a notification reports.
type Type string

// The types of notification.
const (
	Approval  Type = "approval"  // a call waits for approval
	Suspend   Type = "suspend"   // a call suspended itself and waits for resume data
	Expired   Type = "expired"   // a waiting call passed its deadline and was declined
	Completed Type = "completed" // a run completed
	Failed    Type = "failed"    // a run failed
	Escalated Type = "escalated" // a step of a waiting call's escalation ladder (a reminder)
)

// Event returns the Standard Webhooks event type of t, as Body writes it
// in "type": call.approval, call.suspend, call.expired, run.completed or
// run.failed; "unknown" for any other Type.
func (t Type) Event() string {
	switch t {
	case Approval, Suspend, Expired, Escalated:
		return "call." + string(t)
	case Completed, Failed:
		return "run." + string(t)
	}
	return "unknown"
}

// Message is one notification's content, the same for every target.
// Every field may be empty; a target renders what is set.
type Message struct {
	// ID is stable across retries: the webhook-id (e.g. "ntf_01J..."). A
	// Webhook refuses an empty ID, one longer than 256 bytes, and one
	// holding '.', a space or a control character (the signed content is
	// "id.timestamp.body").
	ID   string
	Type Type
	At   time.Time // when the reported transition committed
	Run  Run
	Call *Call // nil for completed and failed

	Output string // completed: the run's output
	Error  string // failed: why

	// URL is the inbox page of the run or call, "" when no publicURL is
	// configured.
	URL string
	// Command is the CLI command that decides the call, e.g.
	// "agentctl approve 01J... --call call_1"; "" for completed and failed.
	Command string
	// Escalation is the step an escalated notification reports; nil
	// for other types.
	Escalation *EscalationStep
}

// Run is the run a notification is about.
type Run struct {
	ID     string
	RootID string   // the root of its tree; ID for a root
	Agent  string   // the agent's name
	Path   []string // the agents from the root down to this run's
	Status string
}

// Call is the call a notification is about.
type Call struct {
	ID   string
	Tool string
	Args json.RawMessage // already redacted by the caller
	Kind string          // approval, suspend, interrupted
	// Why says why a human must decide, phrased for people: "the tool's
	// requireApproval is true".
	Why string
	// Approvers are users and group:NAME; empty: anyone the server's
	// policy allows.
	Approvers []string
	// AlsoApprovers are further lists when a supervisor's gate holds the
	// call as well as its own: whoever decides is named in each.
	AlsoApprovers   [][]string
	ApprovalsNeeded int
	ApprovalsGiven  int
	Deadline        *time.Time
	Payload         json.RawMessage // a suspension's payload
	ResumeSchema    json.RawMessage
	// Upload is who uploaded the run's spec and its digest, for a spec
	// uploaded to a server (untrusted); nil otherwise.
	Upload *Upload
	// Action is what the call will do (engine.ActionView), for a call of
	// an uploaded spec; Will says it in one line.
	Action json.RawMessage
	Will   string
	// Preview is what the tool's preview showed (docs/previews.md); nil
	// when it has none.
	Preview *Preview
}

// Preview is what a tool's preview showed for a call, its secrets
// already cut by the caller.
type Preview struct {
	Status string `json:"status"` // ok, failed or timed-out
	Output string `json:"output"`
	Error  string `json:"error,omitempty"`
	Digest string `json:"digest"`
	// Drift is why a preview run before execution held the call
	// (output or arguments); "" when none did.
	Drift string `json:"drift,omitempty"`
}

// Upload is who uploaded a run's spec, and the spec's digest.
type Upload struct {
	By     string `json:"by"`
	Digest string `json:"digest"`
}

// The JSON shapes of Body: field order is fixed, so output is
// deterministic.
type (
	envelope struct {
		Type      string   `json:"type"`
		Timestamp string   `json:"timestamp"`
		Data      bodyData `json:"data"`
	}
	bodyData struct {
		ID      string    `json:"id"`
		Run     bodyRun   `json:"run"`
		Call    *bodyCall `json:"call,omitempty"`
		Output  string    `json:"output,omitempty"`
		Error   string    `json:"error,omitempty"`
		URL     string    `json:"url,omitempty"`
		Command string    `json:"command,omitempty"`
		// Escalation is the step of an escalated notification.
		Escalation *EscalationStep `json:"escalation,omitempty"`
	}
	bodyRun struct {
		ID     string   `json:"id"`
		RootID string   `json:"rootId"`
		Agent  string   `json:"agent"`
		Path   []string `json:"path"`
		Status string   `json:"status"`
	}
	bodyCall struct {
		ID              string          `json:"id"`
		Tool            string          `json:"tool"`
		Args            json.RawMessage `json:"args"`
		Kind            string          `json:"kind"`
		Why             string          `json:"why"`
		Approvers       []string        `json:"approvers"`
		AlsoApprovers   [][]string      `json:"alsoApprovers,omitempty"`
		ApprovalsNeeded int             `json:"approvalsNeeded"`
		ApprovalsGiven  int             `json:"approvalsGiven"`
		Deadline        string          `json:"deadline,omitempty"`
		Payload         json.RawMessage `json:"payload,omitempty"`
		ResumeSchema    json.RawMessage `json:"resumeSchema,omitempty"`
		Upload          *Upload         `json:"upload,omitempty"`
		Action          json.RawMessage `json:"action,omitempty"`
		Preview         *Preview        `json:"preview,omitempty"`
	}
)

// Body returns m as the JSON body of a webhook, in the Standard Webhooks
// envelope:
//
//	{"type":"call.approval","timestamp":"2025-01-02T15:04:05.123Z","data":{"id":...,"run":{...},"call":{...},...}}
//
// The timestamp is At in RFC 3339, UTC. data holds id, run (id, rootId,
// agent, path, status), call when m.Call is set (id, tool, args, kind,
// why, approvers — always an array —, alsoApprovers when set,
// approvalsNeeded, approvalsGiven,
// and deadline, payload, resumeSchema, upload, action and preview when set), then output, error, url
// and command when not empty. The same m gives the same bytes; HTML
// characters are not escaped. The result is always valid JSON, one line,
// whatever m holds: invalid UTF-8 becomes U+FFFD, and an Args, Payload or
// ResumeSchema that is not valid JSON is sent as a JSON string of its
// bytes.
func (m *Message) Body() []byte {
	if m == nil {
		m = &Message{}
	}
	env := envelope{
		Type:      m.Type.Event(),
		Timestamp: stamp(m.At),
		Data: bodyData{
			ID: m.ID,
			Run: bodyRun{
				ID: m.Run.ID, RootID: m.Run.RootID, Agent: m.Run.Agent,
				Path: nonNil(m.Run.Path), Status: m.Run.Status,
			},
			Output: m.Output, Error: m.Error, URL: m.URL, Command: m.Command,
			Escalation: m.Escalation,
		},
	}
	if c := m.Call; c != nil {
		bc := &bodyCall{
			ID: c.ID, Tool: c.Tool, Args: rawJSON(c.Args), Kind: c.Kind, Why: c.Why,
			Approvers: nonNil(c.Approvers), AlsoApprovers: c.AlsoApprovers,
			ApprovalsNeeded: c.ApprovalsNeeded, ApprovalsGiven: c.ApprovalsGiven,
			Payload: rawJSON(c.Payload), ResumeSchema: rawJSON(c.ResumeSchema),
			Upload: c.Upload, Preview: c.Preview,
		}
		if len(c.Action) > 0 && string(c.Action) != "null" { // stored, a nil one reads back as null
			bc.Action = rawJSON(c.Action)
		}
		if bc.Args == nil {
			bc.Args = json.RawMessage("null")
		}
		if c.Deadline != nil {
			bc.Deadline = stamp(*c.Deadline)
		}
		env.Data.Call = bc
	}
	return marshal(env)
}

// marshal encodes v as one line of JSON without HTML escaping. v is only
// ever one of this package's shapes, which always encode; should one not,
// the result is still valid JSON.
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte(`{"error":"notify: the notification does not encode as JSON"}`)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// stamp formats t for Body: RFC 3339 in UTC with the fraction of a
// second it has. A time whose year RFC 3339 cannot hold is written as
// the zero time.
func stamp(t time.Time) string {
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		t = time.Time{}
	}
	return t.Format(time.RFC3339Nano)
}

// rawJSON returns raw compacted when it is valid JSON, nil when empty,
// else raw as a JSON string.
func rawJSON(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if json.Valid(raw) {
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			return buf.Bytes()
		}
	}
	s, err := json.Marshal(string(raw))
	if err != nil {
		return nil
	}
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Summary returns m as one short line of plain text, for logs and the
// AGENTCTL_NOTIFICATION_SUMMARY of a Command, e.g.
//
//	approval needed: restart_service in run 01J... (ops)
//
// It never holds a control character (newlines included) or invalid
// UTF-8, and is at most a few hundred characters long, whatever m holds.
// Arguments, output and URL are left out; a failed run's error is cut to
// its first line.
func (m *Message) Summary() string {
	if m == nil {
		return "notification"
	}
	run := "run " + oneLine(m.Run.ID, 40)
	if who := m.agentPath(); who != "" {
		run += " (" + oneLine(who, 80) + ")"
	}
	tool := "?"
	if m.Call != nil && m.Call.Tool != "" {
		tool = oneLine(m.Call.Tool, 60)
	}
	switch m.Type {
	case Approval:
		return fmt.Sprintf("approval needed: %s in %s", tool, run)
	case Suspend:
		return fmt.Sprintf("resume data needed: %s in %s", tool, run)
	case Expired:
		return fmt.Sprintf("expired: %s in %s passed its deadline and was declined", tool, run)
	case Escalated:
		return fmt.Sprintf("still waiting for approval: %s in %s%s", tool, run, m.escalation())
	case Completed:
		return run + " completed"
	case Failed:
		if m.Error == "" {
			return run + " failed"
		}
		return run + " failed: " + oneLine(firstLine(m.Error), 120)
	}
	return fmt.Sprintf("%s notification about %s", oneLine(string(m.Type), 20), run)
}

// agentPath is the agents from the root down to the run's, "a/b", or the
// run's agent alone.
func (m *Message) agentPath() string {
	if len(m.Run.Path) > 0 {
		return strings.Join(m.Run.Path, "/")
	}
	return m.Run.Agent
}

// firstLine returns s up to its first line break, trimmed; the first
// non-blank line when s starts with blank ones.
func firstLine(s string) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

// oneLine returns s with invalid UTF-8 replaced, control and other
// non-printing characters (line breaks, NUL) as spaces, runs of spaces
// collapsed and trimmed, cut to at most n runes with "…" marking a cut.
func oneLine(s string, n int) string {
	var b []rune
	space := false
	for _, r := range s { // an invalid byte is utf8.RuneError, printable
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			space = len(b) > 0
			continue
		}
		if space {
			b = append(b, ' ')
			space = false
		}
		b = append(b, r)
		if len(b) > n {
			break
		}
	}
	if len(b) > n {
		b = append(b[:max(n-1, 0)], '…')
	}
	return string(b)
}
