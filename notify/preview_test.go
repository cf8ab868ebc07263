package notify

import (
	"fmt"
	"strings"
	"testing"
)

// A preview reaches Slack as a summary: its first lines, escaped, how
// many more the inbox shows, and the link to the inbox; a failed one
// says so. The webhook body carries it whole.
func TestSlackPreviewSummary(t *testing.T) {
	m := sampleApproval()
	var out []string
	for i := range 20 {
		out = append(out, fmt.Sprintf("+line %d <b>&", i))
	}
	m.Call.Preview = &Preview{Status: "ok", Output: strings.Join(out, "\n"), Digest: "sha256:ab"}
	all := checkSlack(t, SlackBody(m)).texts()
	for _, want := range []string{
		"*Preview*\n```+line 0 &lt;b&gt;&amp;\n", "+line 11 &lt;b&gt;&amp;\n[... 8 more lines: open the inbox]```",
		"|Open in the inbox>",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("Slack message lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "+line 12") {
		t.Errorf("Slack message shows more than %d lines:\n%s", previewSummaryLines, all)
	}
	if body := string(m.Body()); !strings.Contains(body, `"preview":{"status":"ok","output":"+line 0 <b>&\n`) || !strings.Contains(body, "+line 19") {
		t.Errorf("webhook body lacks the whole preview:\n%s", body)
	}
	m.Call.Preview = &Preview{Status: "timed-out", Error: "the preview took longer than its timeout of 1s", Drift: "output"}
	all = checkSlack(t, SlackBody(m)).texts()
	if want := "*Preview (timed-out: the preview took longer than its timeout of 1s) — changed since the approval (output): approve again*"; !strings.Contains(all, want) {
		t.Errorf("Slack message lacks %q:\n%s", want, all)
	}
}
