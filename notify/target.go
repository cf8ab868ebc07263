package notify

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/duration"
)

// Target is one entry of a notify: list, in a spec's agent or the
// server's configuration: which notifications it is for (On) and where
// they go (exactly one of Webhook, Slack and Command). Values that are
// secrets are ${{ env.NAME }} placeholders, kept as written wherever a
// Target is stored and read from the environment of the process that
// sends.
type Target struct {
	On      []Type         `yaml:"on" json:"on"`
	Webhook *WebhookTarget `yaml:"webhook" json:"webhook,omitempty"`
	Slack   *SlackTarget   `yaml:"slack" json:"slack,omitempty"`
	Command []string       `yaml:"command" json:"command,omitempty"`
	// Attempts is how many times a notification is tried before it is
	// given up as failed (default 12).
	Attempts int `yaml:"attempts" json:"attempts,omitempty"`
	// Backoff is the wait before the first retry (default 1s); each
	// next one waits twice as long, up to an hour, with jitter.
	Backoff string `yaml:"backoff" json:"backoff,omitempty"`
	// AllowPrivate lets a webhook or a Slack incoming webhook connect to
	// loopback, link-local, private and other internal addresses
	// (AddressKind), which are refused otherwise.
	AllowPrivate bool `yaml:"allowPrivate" json:"allowPrivate,omitempty"`
}

// WebhookTarget is a generic webhook: URL (a URL or a placeholder) and
// Secret (a placeholder of a whsec_ secret).
type WebhookTarget struct {
	URL    string `yaml:"url" json:"url"`
	Secret string `yaml:"secret" json:"secret"`
}

// SlackTarget is a Slack channel: exactly one of URL, an incoming
// webhook's URL, which is a secret (a placeholder), and Channel, a
// channel id (C0123ABCD) or name (#ops) posted to through the bot of the
// server's Slack app (a Bot), which is no secret.
type SlackTarget struct {
	URL     string `yaml:"url" json:"url"`
	Channel string `yaml:"channel" json:"channel,omitempty"`
}

// ErrNoBot is the error of a Sender of a slack.channel target resolved
// without a bot: not permanent, the notification waits for a process
// that has one.
var ErrNoBot = errors.New("posting to a slack channel needs the slack: section of agentctl serve's configuration (botToken)")

// channelPattern is a Slack channel id or name.
var channelPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^#?[A-Za-z0-9_-]+$`) })

// Types returns every Type, in the order they are documented.
func Types() []Type { return []Type{Approval, Suspend, Expired, Completed, Failed, Escalated} }

// Defaults of a Target.
const (
	DefaultAttempts = 12
	DefaultBackoff  = time.Second
	MaxBackoff      = time.Hour
)

// envRef is the one placeholder a notify value may be.
var envRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\$\{\{\s*env\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$`) })

// EnvName returns the variable a value names as ${{ env.NAME }}, and
// whether it is such a placeholder.
func EnvName(v string) (string, bool) {
	m := envRef().FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return "", false
	}
	return m[1], true
}

// Problem is what is wrong with one field of a Target: Field is its key
// path under the entry ("webhook.secret").
type Problem struct {
	Field string
	Msg   string
}

// Check returns what is wrong with t, each at its field.
func (t Target) Check() []Problem {
	var ps []Problem
	add := func(field, format string, args ...any) { ps = append(ps, Problem{field, fmt.Sprintf(format, args...)}) }
	if len(t.On) == 0 {
		add("on", "say which notifications it is for: on: [%s]", typeList())
	}
	for _, o := range t.On {
		if !slices.Contains(Types(), o) {
			add("on", "unknown notification %q (known: %s)", o, typeList())
		}
	}
	n := 0
	if t.Webhook != nil {
		n++
		t.checkWebhook(add)
	}
	if t.Slack != nil {
		n++
		t.checkSlack(add)
	}
	if t.Command != nil {
		n++
		if len(t.Command) == 0 || t.Command[0] == "" {
			add("command", "give the program and its arguments: command: [notify-send, agentctl]")
		}
		for _, a := range t.Command {
			if strings.Contains(a, "${{") {
				add("command", "a command's arguments are taken as written: %q is no placeholder here (the notification is on its stdin; its secrets belong in the program's own configuration)", a)
			}
		}
	}
	if n != 1 {
		add("", "give exactly one of webhook, slack and command (it has %d)", n)
	}
	if t.Attempts < 0 || t.Attempts > 100 {
		add("attempts", "attempts %d: want 1 to 100", t.Attempts)
	}
	if t.AllowPrivate && t.Webhook == nil && (t.Slack == nil || t.Slack.Channel != "") {
		add("allowPrivate", "allowPrivate applies to a webhook and to slack.url, an incoming webhook, only")
	}
	if t.Backoff != "" {
		if d, err := duration.Parse(t.Backoff); err != nil || d < time.Millisecond || d > MaxBackoff {
			add("backoff", "backoff %q: want a duration from 1ms to 1h, such as 1s", t.Backoff)
		}
	}
	return ps
}

func (t Target) checkWebhook(add func(field, format string, args ...any)) {
	w := t.Webhook
	if _, ok := EnvName(w.URL); !ok {
		u, err := url.Parse(w.URL)
		switch {
		case w.URL == "":
			add("webhook.url", "give the receiver's URL")
		case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
			add("webhook.url", "want an http(s) URL or ${{ env.NAME }}")
		case u.User != nil || u.RawQuery != "":
			add("webhook.url", "a URL with credentials or a query string holds a secret: write it as ${{ env.NAME }}")
		case !t.AllowPrivate && HostKind(u.Hostname()) != "":
			add("webhook.url", "%s is %s, where agentctl does not send: set allowPrivate: true beside webhook: (not inside it) to allow it",
				oneLine(u.Hostname(), 100), HostKind(u.Hostname()))
		}
	}
	if _, ok := EnvName(w.Secret); !ok {
		add("webhook.secret", "the signing secret is a secret: write it as ${{ env.NAME }} (its value: whsec_ and base64)")
	}
}

func (t Target) checkSlack(add func(field, format string, args ...any)) {
	s := t.Slack
	switch {
	case s.URL != "" && s.Channel != "":
		add("slack.channel", "give exactly one of slack.url (an incoming webhook) and slack.channel (which the Slack app of agentctl serve posts to)")
	case s.Channel != "":
		switch {
		case strings.Contains(s.Channel, "${{"):
			add("slack.channel", "a channel id is no secret: write it as it is, such as C0123ABCD, not as a placeholder")
		case len(s.Channel) > 80 || !channelPattern().MatchString(s.Channel):
			add("slack.channel", "want a channel id such as C0123ABCD: 1 to 80 letters, digits, '-' and '_', '#' only first")
		}
	default:
		if _, ok := EnvName(s.URL); !ok {
			add("slack.url", "a Slack webhook URL is a secret: write it as ${{ env.NAME }} and set NAME where agentctl sends (or slack.channel, which the Slack app of agentctl serve posts to)")
		}
	}
}

func typeList() string {
	types := Types()
	s := make([]string, len(types))
	for i, t := range types {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// For reports whether t is for notifications of type ty.
func (t Target) For(ty Type) bool { return slices.Contains(t.On, ty) }

// Name is how lists show t: "webhook https://host/path", "slack" (an
// incoming webhook), "slack channel C0123ABCD", "command notify-send";
// never a secret.
func (t Target) Name() string {
	switch {
	case t.Webhook != nil:
		if name, ok := EnvName(t.Webhook.URL); ok {
			return "webhook $" + name
		}
		if u, err := url.Parse(t.Webhook.URL); err == nil {
			return "webhook " + u.Scheme + "://" + u.Host + u.Path
		}
		return "webhook"
	case t.Slack != nil:
		if t.Slack.Channel != "" && t.Slack.URL == "" {
			return "slack channel " + oneLine(t.Slack.Channel, 80)
		}
		return "slack"
	case len(t.Command) > 0:
		return "command " + t.Command[0]
	}
	return "none"
}

// Retry returns how long to wait after the n-th failed attempt (n ≥ 1)
// before the next, given jitter in [0, 1): the backoff doubled n-1
// times, at most MaxBackoff, of which the second half is jittered. It
// returns false when the attempts are used up.
func (t Target) Retry(n int, jitter float64) (time.Duration, bool) {
	attempts := t.Attempts
	if attempts == 0 {
		attempts = DefaultAttempts
	}
	if n >= attempts {
		return 0, false
	}
	d := DefaultBackoff
	if b, err := duration.Parse(t.Backoff); err == nil && b > 0 {
		d = b
	}
	for i := 1; i < n && d < MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, MaxBackoff)
	return d/2 + time.Duration(jitter*float64(d/2)), true
}

// Sender sends one notification once, signing it (a webhook's) as of
// now.
type Sender func(ctx context.Context, m *Message, now time.Time) error

// Resolve reads t's placeholders from env (os.LookupEnv) and returns the
// sender it names; a command runs with the environment base (what every
// program needs: PATH, HOME, ...; never a secret), and a slack.channel
// target posts through bot (Bot.Post, its ts dropped). A placeholder
// whose variable is unset is an error naming the variable, never a
// value. A slack.channel target with no bot (nil, or no Token) resolves
// to a Sender whose every attempt fails with a *SendError wrapping
// ErrNoBot, which is not ErrPermanent: a process that has the bot may
// send it. A webhook or slack.url target connects to internal addresses
// only with AllowPrivate (Webhook.Send).
func (t Target) Resolve(env func(string) (string, bool), base []string, bot *Bot) (Sender, error) {
	val := func(field, v string) (string, error) {
		name, ok := EnvName(v)
		if !ok {
			return v, nil
		}
		x, ok := env(name)
		if !ok || x == "" {
			return "", fmt.Errorf("%s: %s is not set in the environment of this agentctl", field, name)
		}
		return x, nil
	}
	switch {
	case t.Webhook != nil:
		u, err := val("webhook.url", t.Webhook.URL)
		if err != nil {
			return nil, err
		}
		s, err := val("webhook.secret", t.Webhook.Secret)
		if err != nil {
			return nil, err
		}
		key, err := ParseSecret(s)
		if err != nil {
			return nil, fmt.Errorf("webhook.secret: %w", err)
		}
		w := Webhook{URL: u, Key: key, AllowPrivate: t.AllowPrivate}
		if name, ok := EnvName(t.Webhook.URL); ok {
			w.Name = "[env." + name + "]" // the URL is a secret: no part of it is printed
		}
		return w.Send, nil
	case t.Slack != nil && t.Slack.Channel != "":
		return t.channelSender(bot)
	case t.Slack != nil:
		u, err := val("slack.url", t.Slack.URL)
		if err != nil {
			return nil, err
		}
		sl := Slack{URL: u, AllowPrivate: t.AllowPrivate}
		return func(ctx context.Context, m *Message, _ time.Time) error { return sl.Send(ctx, m) }, nil
	case len(t.Command) > 0:
		c := Command{Argv: t.Command, Env: base}
		return func(ctx context.Context, m *Message, _ time.Time) error { return c.Send(ctx, m) }, nil
	}
	return nil, fmt.Errorf("no target")
}

// channelSender is the Sender of a slack.channel target.
func (t Target) channelSender(bot *Bot) (Sender, error) {
	if t.Slack.URL != "" {
		return nil, fmt.Errorf("slack: give exactly one of slack.url and slack.channel")
	}
	channel, name := t.Slack.Channel, t.Name()
	if bot == nil || bot.Token == "" {
		return func(context.Context, *Message, time.Time) error {
			return &SendError{Target: name, Err: ErrNoBot}
		}, nil
	}
	b := *bot
	return func(ctx context.Context, m *Message, _ time.Time) error {
		_, err := b.Post(ctx, channel, m)
		return err
	}, nil
}
