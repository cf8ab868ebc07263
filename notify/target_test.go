package notify

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCheckSlack(t *testing.T) {
	tests := []struct {
		name  string
		slack SlackTarget
		field string // "": no problem
		want  string
	}{
		{"webhook", SlackTarget{URL: "${{ env.SLACK_URL }}"}, "", ""},
		{"channel id", SlackTarget{Channel: "C0123ABCD"}, "", ""},
		{"channel name", SlackTarget{Channel: "#ops-alerts_2"}, "", ""},
		{"80 characters", SlackTarget{Channel: "#" + strings.Repeat("c", 79)}, "", ""},
		{"81 characters", SlackTarget{Channel: strings.Repeat("c", 81)}, "slack.channel", "1 to 80"},
		{"both", SlackTarget{URL: "${{ env.SLACK_URL }}", Channel: "C0123ABCD"}, "slack.channel", "exactly one"},
		{"neither", SlackTarget{}, "slack.url", "${{ env.NAME }}"},
		{"plain URL", SlackTarget{URL: "https://hooks.slack.com/services/T/B/X"}, "slack.url", "secret"},
		{"placeholder channel", SlackTarget{Channel: "${{ env.CHANNEL }}"}, "slack.channel", "no secret"},
		{"space", SlackTarget{Channel: "C0123 ABCD"}, "slack.channel", "channel id"},
		{"newline", SlackTarget{Channel: "C0123\n"}, "slack.channel", "channel id"},
		{"hash inside", SlackTarget{Channel: "ops#1"}, "slack.channel", "'#' only first"},
		{"hash only", SlackTarget{Channel: "#"}, "slack.channel", "channel id"},
		{"two hashes", SlackTarget{Channel: "##ops"}, "slack.channel", "channel id"},
		{"unicode", SlackTarget{Channel: "çanal"}, "slack.channel", "channel id"},
		{"at", SlackTarget{Channel: "@alice"}, "slack.channel", "channel id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.slack
			ps := Target{On: []Type{Approval}, Slack: &s}.Check()
			if tt.field == "" {
				if len(ps) != 0 {
					t.Errorf("problems %+v", ps)
				}
				return
			}
			if len(ps) != 1 || ps[0].Field != tt.field || !strings.Contains(ps[0].Msg, tt.want) {
				t.Errorf("problems %+v, want one at %s saying %q", ps, tt.field, tt.want)
			}
		})
	}
}

func TestSlackTargetName(t *testing.T) {
	if n := (Target{Slack: &SlackTarget{URL: "${{ env.X }}"}}).Name(); n != "slack" {
		t.Errorf("Name = %q", n)
	}
	if n := (Target{Slack: &SlackTarget{Channel: "C0123"}}).Name(); n != "slack channel C0123" {
		t.Errorf("Name = %q", n)
	}
	var s SlackTarget
	if err := json.Unmarshal([]byte(`{"url":"","channel":"C0123"}`), &s); err != nil || s.Channel != "C0123" {
		t.Errorf("decoded %+v, %v", s, err)
	}
	if b, _ := json.Marshal(SlackTarget{URL: "${{ env.X }}"}); string(b) != `{"url":"${{ env.X }}"}` {
		t.Errorf("encoded %s", b)
	}
}

func TestResolveSlackChannel(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	target := Target{On: []Type{Approval}, Slack: &SlackTarget{Channel: "C0123ABCD"}}
	for _, bot := range []*Bot{nil, {APIURL: "http://127.0.0.1:1/"}} {
		send, err := target.Resolve(noEnv, nil, bot)
		if err != nil {
			t.Fatal(err)
		}
		err = send(context.Background(), botApproval(), time.Now())
		var se *SendError
		if !errors.Is(err, ErrNoBot) || errors.Is(err, ErrPermanent) || !errors.As(err, &se) {
			t.Errorf("Send without a bot = %#v", err)
		}
		if err != nil && err.Error() != "slack channel C0123ABCD: "+ErrNoBot.Error() {
			t.Errorf("error = %q", err)
		}
	}

	srv, got := standIn(t, 200, `{"ok":true,"ts":"1.2"}`, nil)
	bot := &Bot{APIURL: srv.URL, Token: testToken}
	send, err := target.Resolve(noEnv, nil, bot)
	if err != nil {
		t.Fatal(err)
	}
	bot.Token = "changed" // Resolve took a copy
	if err := send(context.Background(), botApproval(), time.Now()); err != nil {
		t.Fatal(err)
	}
	reqs := got()
	if len(reqs) != 1 || reqs[0].path != "/chat.postMessage" || reqs[0].auth != "Bearer "+testToken || !strings.Contains(string(reqs[0].body), `"channel":"C0123ABCD"`) {
		t.Errorf("requests %+v", reqs)
	}

	both := Target{On: []Type{Approval}, Slack: &SlackTarget{URL: "${{ env.X }}", Channel: "C1"}}
	if _, err := both.Resolve(noEnv, nil, bot); err == nil {
		t.Errorf("Resolve of both url and channel: no error")
	}
	hook := Target{On: []Type{Approval}, Slack: &SlackTarget{URL: "${{ env.SLACK_URL }}"}}
	if _, err := hook.Resolve(noEnv, nil, bot); err == nil || !strings.Contains(err.Error(), "SLACK_URL is not set") {
		t.Errorf("Resolve of an unset webhook URL = %v", err)
	}
	env := func(string) (string, bool) { return srv.URL + "/services/T/B/X", true }
	send, err = hook.Resolve(env, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := send(context.Background(), sampleApproval(), time.Now()); !errors.Is(err, ErrPrivateAddress) {
		t.Fatalf("a slack.url on loopback without allowPrivate: %v", err)
	}
	hook.AllowPrivate = true
	if send, err = hook.Resolve(env, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := send(context.Background(), sampleApproval(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if reqs := got(); len(reqs) != 2 || reqs[1].path != "/services/T/B/X" || reqs[1].auth != "" {
		t.Errorf("requests %+v", reqs)
	}
}

// TestCheckAllowPrivate: a webhook URL written out with an internal
// address (or localhost) is refused at its field unless the target says
// allowPrivate, which applies to webhooks and Slack URLs only.
func TestCheckAllowPrivate(t *testing.T) {
	hook := func(u string, allow bool) Target {
		return Target{On: []Type{Approval}, Webhook: &WebhookTarget{URL: u, Secret: "${{ env.S }}"}, AllowPrivate: allow}
	}
	tests := []struct {
		name   string
		target Target
		field  string
		want   string
	}{
		{"metadata", hook("http://169.254.169.254/latest/meta-data/", false), "webhook.url",
			"169.254.169.254 is a link-local address, where agentctl does not send: set allowPrivate: true beside webhook: (not inside it) to allow it"},
		{"loopback v6", hook("http://[::1]:8080/hook", false), "webhook.url", "::1 is a loopback address"},
		{"mapped", hook("http://[::ffff:10.0.0.1]/hook", false), "webhook.url", "::ffff:10.0.0.1 is a private address"},
		{"localhost", hook("http://localhost:8080/hook", false), "webhook.url", "localhost is a loopback address"},
		{"CGNAT", hook("https://100.64.1.2/hook", false), "webhook.url", "100.64.1.2 is a carrier-grade NAT address"},
		{"allowed", hook("http://10.0.0.5/hook", true), "", ""},
		{"public", hook("https://203.0.113.7/hook", false), "", ""},
		{"a name", hook("https://hooks.example.com/hook", false), "", ""},
		{"placeholder", hook("${{ env.HOOK_URL }}", false), "", ""},
		{"slack url", Target{On: []Type{Approval}, Slack: &SlackTarget{URL: "${{ env.U }}"}, AllowPrivate: true}, "", ""},
		{"slack channel", Target{On: []Type{Approval}, Slack: &SlackTarget{Channel: "C1"}, AllowPrivate: true}, "allowPrivate", "applies to a webhook and to slack.url"},
		{"command", Target{On: []Type{Approval}, Command: []string{"true"}, AllowPrivate: true}, "allowPrivate", "applies to a webhook and to slack.url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := tt.target.Check()
			if tt.field == "" {
				if len(ps) > 0 {
					t.Fatalf("Check = %+v", ps)
				}
				return
			}
			if len(ps) != 1 || ps[0].Field != tt.field || !strings.Contains(ps[0].Msg, tt.want) {
				t.Fatalf("Check = %+v, want %s: %s", ps, tt.field, tt.want)
			}
		})
	}
}
