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
	"unicode"
	"unicode/utf16"
)

// Slack's limits on Block Kit text, in characters.
const (
	slackHeaderMax  = 150  // a header block's plain_text
	slackSectionMax = 3000 // a section's text, a context element
	slackFieldMax   = 2000 // one field of a section
	slackValueMax   = 300  // what this package puts in one field
)

// Slack is a Slack incoming webhook (https://api.slack.com/messaging/webhooks).
// Its URL is a secret: errors name its host only.
type Slack struct {
	URL string // https://hooks.slack.com/services/...
	// Client and AllowPrivate are a Webhook's: nil, a client that uses
	// no proxy and refuses internal addresses unless AllowPrivate.
	Client       *http.Client
	AllowPrivate bool
}

// Send makes one attempt to post m to the channel, as SlackBody renders
// it. The attempt ends with ctx, or after DefaultTimeout when ctx has no
// deadline.
//
// It returns nil when Slack answers 2xx ("ok"), else a *SendError
// classified as Webhook.Send does: 400 (invalid_payload), 403, 404
// (no_service), 410 (channel_is_archived), any other 4xx but 408 and
// 429, and redirects are permanent; 408, 429 and 5xx are worth retrying,
// with RetryAfter from Retry-After; network errors are worth retrying; a
// connection refused for its address is permanent (ErrPrivateAddress).
// Errors say the host and Slack's one-line answer, never the URL's path
// or query.
func (s Slack) Send(ctx context.Context, m *Message) error {
	u, err := parseTarget(s.URL)
	if err != nil {
		return &SendError{Target: "slack", Permanent: true, Err: err}
	}
	name := "slack " + oneLine(u.Host, 200)
	if m == nil {
		return &SendError{Target: name, Permanent: true, Err: errors.New("no message")}
	}
	return post(ctx, sendClient(s.Client, s.AllowPrivate), u, http.Header{}, SlackBody(m), time.Now(), name, hidden(u, true))
}

// The JSON shapes of a Slack message.
type (
	slackMessage struct {
		Text   string       `json:"text"`
		Blocks []slackBlock `json:"blocks"`
	}
	slackBlock struct {
		Type     string      `json:"type"`
		Text     *slackText  `json:"text,omitempty"`
		Fields   []slackText `json:"fields,omitempty"`
		Elements []slackText `json:"elements,omitempty"`
	}
	slackText struct {
		Type string `json:"type"` // plain_text or mrkdwn
		Text string `json:"text"`
	}
)

// SlackBody returns the JSON message Slack.Send posts for m: a plain
// fallback "text" (m.Summary) and Block Kit "blocks". For a call: a
// header ("Approval needed: restart_service"), a section of fields
// (agent path, run, tool, why, who may decide, approvals "1 of 2",
// deadline), the arguments (and a suspension's payload and resume
// schema) in code blocks, a link to m.URL when it is an http(s) URL, and
// m.Command in code. For a run: a header, its fields, and its output or
// error in a code block.
//
// Every piece of text from m has &, < and > escaped as Slack's mrkdwn
// asks, so none becomes a link or mention, and is cut (marked "…") to
// keep within Slack's limits: 150 characters for the header, 3000 for a
// section, 2000 for a field. The result is valid JSON whatever m holds.
func SlackBody(m *Message) []byte { return marshal(slackMessageOf(m)) }

// slackMessageOf is the message SlackBody encodes.
func slackMessageOf(m *Message) slackMessage {
	if m == nil {
		m = &Message{}
	}
	msg := slackMessage{Text: fit(m.Summary(), slackSectionMax)}
	msg.Blocks = append(msg.Blocks, slackBlock{
		Type: "header",
		Text: &slackText{Type: "plain_text", Text: fit(oneLine(slackTitle(m), 1000), slackHeaderMax)},
	})
	if fields := slackFields(m); len(fields) > 0 {
		msg.Blocks = append(msg.Blocks, slackBlock{Type: "section", Fields: fields})
	}
	if m.Type == Expired {
		msg.Blocks = append(msg.Blocks, mrkdwnSection("The call passed its deadline and was declined."))
	}
	if m.Type == Escalated && m.Escalation != nil {
		msg.Blocks = append(msg.Blocks, mrkdwnSection(fit("Escalation "+oneLine(m.Escalation.Text(), 1000), slackSectionMax)))
	}
	if c := m.Call; c != nil {
		for _, part := range []struct {
			label string
			raw   json.RawMessage
		}{{"Arguments", c.Args}, {"Payload", c.Payload}, {"Resume schema", c.ResumeSchema}} {
			if len(bytes.TrimSpace(part.raw)) > 0 {
				msg.Blocks = append(msg.Blocks, codeSection(part.label, jsonText(part.raw)))
			}
		}
		if c.Preview != nil {
			msg.Blocks = append(msg.Blocks, codeSection(previewLabel(c.Preview), previewSummary(c.Preview.Output)))
		}
	}
	if m.Type == Completed && m.Output != "" {
		msg.Blocks = append(msg.Blocks, codeSection("Output", m.Output))
	}
	if m.Type == Failed && m.Error != "" {
		msg.Blocks = append(msg.Blocks, codeSection("Error", m.Error))
	}
	if link := slackLink(m.URL, "Open in the inbox"); link != "" {
		msg.Blocks = append(msg.Blocks, mrkdwnSection(link))
	}
	if m.Command != "" {
		cmd := "`" + fit(noBackticks(oneLine(m.Command, 1000)), slackSectionMax-len("Decide: ``")) + "`"
		msg.Blocks = append(msg.Blocks, slackBlock{Type: "context", Elements: []slackText{{Type: "mrkdwn", Text: "Decide: " + cmd}}})
	}
	return msg
}

// slackTitle is the header's text, unescaped.
func slackTitle(m *Message) string {
	tool := "a call"
	if m.Call != nil && m.Call.Tool != "" {
		tool = m.Call.Tool
	}
	agent := m.Run.Agent
	if agent == "" {
		agent = m.Run.ID
	}
	switch m.Type {
	case Approval:
		return "Approval needed: " + tool
	case Suspend:
		return "Resume data needed: " + tool
	case Expired:
		return "Expired: " + tool
	case Escalated:
		if m.decided() {
			return "Escalated and decided: " + tool
		}
		return "Still waiting for approval: " + tool
	case Completed:
		return "Run completed: " + agent
	case Failed:
		return "Run failed: " + agent
	}
	return "Notification: " + string(m.Type)
}

// slackFields returns the fields section of m: label and value, set ones
// only (at most 10, Slack's limit).
func slackFields(m *Message) []slackText {
	var out []slackText
	add := func(label, value string, code bool) {
		if value == "" {
			return
		}
		v := fit(oneLine(value, slackValueMax), slackValueMax)
		if code {
			v = "`" + noBackticks(v) + "`"
		}
		out = append(out, slackText{Type: "mrkdwn", Text: "*" + label + "*\n" + v})
	}
	add("Agent", m.agentPath(), false)
	add("Run", m.Run.ID, true)
	if m.Type == Completed || m.Type == Failed {
		add("Status", m.Run.Status, false)
	}
	if c := m.Call; c != nil {
		add("Tool", c.Tool, true)
		if c.Kind != "" && c.Kind != string(m.Type) {
			add("Kind", c.Kind, false)
		}
		add("Why", c.Why, false)
		if c.Upload != nil {
			add("Uploaded by", c.Upload.By+" (untrusted spec "+c.Upload.Digest[:min(len(c.Upload.Digest), 19)]+"…)", false)
		}
		add("Will", c.Will, true)
		if m.Type != Expired {
			who := "anyone the server's policy allows"
			if len(c.Approvers) > 0 {
				who = strings.Join(c.Approvers, ", ")
			}
			if len(c.AlsoApprovers) > 0 {
				who = "one of " + who
				for _, also := range c.AlsoApprovers {
					who += " who is also one of " + strings.Join(also, ", ")
				}
			}
			add("Who may decide", who, false)
			if c.ApprovalsNeeded > 1 || c.ApprovalsGiven > 0 {
				add("Approvals", fmt.Sprintf("%d of %d", c.ApprovalsGiven, c.ApprovalsNeeded), false)
			}
		}
		if c.Deadline != nil {
			out = append(out, slackText{Type: "mrkdwn", Text: "*Deadline*\n" + slackDate(*c.Deadline)})
		}
	}
	return out[:min(len(out), 10)]
}

// slackDate shows t in the reader's time zone, with UTC as the fallback.
func slackDate(t time.Time) string {
	t = t.UTC()
	if y := t.Year(); y < 1970 || y > 9999 {
		return t.Format("2006-01-02 15:04 UTC")
	}
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", t.Unix(), t.Format("2006-01-02 15:04 UTC"))
}

func mrkdwnSection(text string) slackBlock {
	return slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: text}}
}

// codeSection is a section of label in bold over text in a code block,
// cut to fit in a section.
func codeSection(label, text string) slackBlock {
	head := "*" + label + "*\n```"
	return mrkdwnSection(head + fit(noBackticks(multiLine(text)), slackSectionMax-len(head)-3) + "```")
}

// jsonText returns raw indented when it is valid JSON and not huge (a
// backtick in it, only ever inside a string, written \u0060), else raw
// as it is.
func jsonText(raw json.RawMessage) string {
	if !json.Valid(raw) {
		return string(raw)
	}
	var buf bytes.Buffer
	if len(raw) > 16<<10 || json.Indent(&buf, raw, "", "  ") != nil {
		buf.Reset()
		if json.Compact(&buf, raw) != nil {
			return string(raw)
		}
	}
	return strings.ReplaceAll(htmlUnescaped(buf.String()), "`", `\u0060`)
}

// htmlUnescaped undoes the escapes of <, > and & that Go's JSON writes
// in strings (\u003c, \u003e, \u0026), so that "a && b" reads as
// written; fit escapes them for Slack. A backslash escaped before one
// (\\u003c) is left as it is.
func htmlUnescaped(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			if rest := s[i:]; len(rest) >= 6 {
				switch rest[:6] {
				case `\u003c`:
					b.WriteByte('<')
					i += 5
					continue
				case `\u003e`:
					b.WriteByte('>')
					i += 5
					continue
				case `\u0026`:
					b.WriteByte('&')
					i += 5
					continue
				}
			}
			b.WriteString(s[i : i+2]) // another escape, whole: \\ stays two
			i++
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// slackLink returns a mrkdwn link to raw labelled text, "" unless raw is
// an http or https URL.
func slackLink(raw, text string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	s := strings.NewReplacer("&", "&amp;", "<", "%3C", ">", "%3E", "|", "%7C").Replace(u.String())
	if utf16Len(s)+len(text)+3 > slackSectionMax {
		return ""
	}
	return "<" + s + "|" + text + ">"
}

// noBackticks replaces backticks, which would end a code span or block,
// with a look-alike.
func noBackticks(s string) string { return strings.ReplaceAll(s, "`", "ˋ") }

// multiLine returns s with invalid UTF-8 replaced, CRLF as LF, and
// control and non-printing characters but line feeds and tabs dropped.
func multiLine(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || r == ' ' || unicode.IsPrint(r) {
			return r
		}
		if unicode.IsSpace(r) {
			return ' '
		}
		return -1
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// fit returns s with &, < and > escaped for Slack, in at most limit
// characters (UTF-16 code units, counting escapes whole): when longer it
// is cut, never inside an escape, and ends with "…".
func fit(s string, limit int) string {
	if limit <= 0 {
		return ""
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	n := 0
	full := true
	for _, r := range s {
		piece, w := escapeRune(r)
		if n+w > limit {
			full = false
			break
		}
		b.WriteString(piece)
		n += w
	}
	if full {
		return b.String()
	}
	// Cut again, leaving room for the ellipsis.
	b.Reset()
	n = 0
	for _, r := range s {
		piece, w := escapeRune(r)
		if n+w > limit-1 {
			break
		}
		b.WriteString(piece)
		n += w
	}
	return b.String() + "…"
}

// escapeRune returns r as Slack text and its length in UTF-16 units.
func escapeRune(r rune) (string, int) {
	switch r {
	case '&':
		return "&amp;", 5
	case '<':
		return "&lt;", 4
	case '>':
		return "&gt;", 4
	}
	return string(r), max(utf16.RuneLen(r), 1)
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += max(utf16.RuneLen(r), 1)
	}
	return n
}
