package notify

import (
	"encoding/json"
	"strings"
	"testing"
)

// A call of an uploaded spec says who uploaded it, its digest and what
// it will do: in a webhook's body and in a Slack message.
func TestUploadedCall(t *testing.T) {
	m := sampleApproval()
	m.Call.Upload = &Upload{By: "mallory", Digest: "sha256:4f2a9c0e1b7d"}
	m.Call.Action = json.RawMessage(`{"kind":"http","rendered":{"method":"GET","url":"https://status.example/nginx"}}`)
	m.Call.Will = "GET https://status.example/nginx"
	body := string(m.Body())
	for _, want := range []string{`"upload":{"by":"mallory","digest":"sha256:4f2a9c0e1b7d"}`,
		`"action":{"kind":"http","rendered":{"method":"GET","url":"https://status.example/nginx"}}`} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %s:\n%s", want, body)
		}
	}
	slack := string(SlackBody(m))
	for _, want := range []string{`*Uploaded by*\nmallory (untrusted spec sha256:4f2a9c0e1b7d…)`, "*Will*\\n`GET https://status.example/nginx`"} {
		if !strings.Contains(slack, want) {
			t.Errorf("the Slack message lacks %s:\n%s", want, slack)
		}
	}
}
