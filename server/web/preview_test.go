package web

import (
	"encoding/json"
	"html/template"
	"net/url"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/api"
)

// renderCall renders one inbox item as the inbox does.
func renderCall(t *testing.T, it item) string {
	t.Helper()
	tt := template.Must(template.New("").Funcs(funcs()).ParseFS(templateFS, "templates/*.html"))
	var b strings.Builder
	if err := tt.ExecuteTemplate(&b, "call", map[string]any{"It": it, "CSRF": "x", "Back": "/"}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A preview that looks like a unified diff is shown line by line, each
// added, removed, hunk or header line classed for its colour; whatever
// it holds is escaped (markup, a terminal's escapes). A drift shows the
// preview approved and the one now, and a failed preview says so.
func TestInboxPreviewDiff(t *testing.T) {
	pv := `{"status":"ok","output":"--- live\n+++ desired\n@@ -1 +1 @@\n-replicas: 2\n+replicas: 3 <script>alert(1)</script>\n context \u001b[31m\n","digest":"sha256:ab","argsDigest":"cd","at":"2026-12-05T09:15:00Z"}`
	it := item{Approval: api.Approval{RunID: "R", CallID: "call_1", Tool: "apply", Kind: "approval", Args: json.RawMessage(`{}`),
		Preview: json.RawMessage(pv)}}
	out := renderCall(t, it)
	for _, want := range []string{
		`<pre class="preview diff" aria-labelledby="v-R-call_1">`,
		`<span class="head">--- live</span>`, `<span class="head">&#43;&#43;&#43; desired</span>`,
		`<span class="hunk">@@ -1 &#43;1 @@</span>`, `<span class="del">-replicas: 2</span>`,
		`<span class="add">&#43;replicas: 3 &lt;script&gt;alert(1)&lt;/script&gt;</span>`,
		"\n context \\u{001B}[31m\n", `<code class="digest">sha256:ab</code>`,
		// The approve form sends the preview it showed: approve that or nothing.
		`<input type="hidden" name="preview" value="sha256:ab">`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the inbox lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "<script>") {
		t.Errorf("the inbox renders markup from a preview:\n%s", out)
	}

	it.Preview = json.RawMessage(`{"status":"timed-out","output":"plain\n+not a diff","error":"took longer than 1s","digest":"sha256:ef","argsDigest":"cd","at":"2026-12-05T09:15:00Z"}`)
	it.PreviewDrift = json.RawMessage(`{"cause":"output","approved":` + pv + `}`)
	out = renderCall(t, it)
	for _, want := range []string{
		"The preview changed after the approval: the call did not run; decide again",
		`Preview approved: <span class="preview-status status-ok">ok</span>`,
		`Preview: <span class="preview-status status-timed-out">timed-out</span> (took longer than 1s)`,
		`<pre class="preview" aria-labelledby="v-R-call_1">plain` + "\n&#43;not a diff\n</pre>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the inbox lacks %q:\n%s", want, out)
		}
	}
}

// The approve form's preview is sent as previewDigest; an edited
// approval sends none (its arguments are previewed anew).
func TestApproveSendsThePreviewSeen(t *testing.T) {
	req, _ := requestOf("approve", "call_1", url.Values{"preview": {"sha256:ab"}})
	if req.PreviewDigest != "sha256:ab" {
		t.Errorf("approve sends previewDigest %q", req.PreviewDigest)
	}
	req, _ = requestOf("approve", "call_1", url.Values{"preview": {"sha256:ab"}, "edit": {"1"}, "args": {"{}"}})
	if req.PreviewDigest != "" {
		t.Errorf("an edited approval sends previewDigest %q", req.PreviewDigest)
	}
}
