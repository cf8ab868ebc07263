package server

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/notify"
)

// SlackConfig is the Slack app agentctl serve posts approval messages
// through and takes button presses from (docs/slack.md).
type SlackConfig struct {
	// SigningSecret is the app's signing secret, ${{ env.NAME }}: what
	// proves that a request to /slack/interactions comes from Slack.
	SigningSecret string `yaml:"signingSecret"`
	// BotToken is the app's bot token (xoxb-...), ${{ env.NAME }}: used
	// only to post and update messages and open the Decline form.
	BotToken string `yaml:"botToken"`
	// APIURL is Slack's Web API (default https://slack.com/api/); tests
	// and proxies point it elsewhere.
	APIURL string `yaml:"apiURL"`
	// Users maps Slack user ids to agentctl users: a button press is a
	// decision by the user its Slack id maps to, and by nobody when it
	// maps to none. Slack's display names and e-mails are never used.
	Users map[string]string `yaml:"users"`
}

// slackUserID is the shape of a Slack user id (U..., or W... in an
// Enterprise Grid).
var slackUserID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`) })

// checkSlack validates the slack: section, and the notify targets that
// post to a channel through its bot.
func (c *Config) checkSlack(p *checker, root *yaml.Node) {
	n := find(root, "slack")
	if sc := c.Slack; sc != nil {
		for _, f := range []struct{ key, v string }{{"signingSecret", sc.SigningSecret}, {"botToken", sc.BotToken}} {
			if _, ok := notify.EnvName(f.v); !ok {
				p.add(orNode(find(n, f.key), n), "slack.%s: a secret: write it as ${{ env.NAME }} and set NAME where agentctl serve runs", f.key)
			}
		}
		if sc.APIURL != "" {
			u, err := url.Parse(sc.APIURL)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" {
				p.add(find(n, "apiURL"), "slack.apiURL: want Slack's Web API as an http(s) URL without credentials or query, such as https://slack.com/api/")
			}
		}
		users := find(n, "users")
		for _, id := range sortedKeys(sc.Users) {
			at := orNode(keyNode(users, id), users)
			if !slackUserID().MatchString(id) {
				p.add(at, "slack.users: %q is not a Slack user id (U or W, then capitals and digits, such as U024BE7LH)", id)
			}
			c.checkName(p, at, "slack.users."+id, sc.Users[id], false)
		}
	}
	list := find(root, "notify")
	for i, t := range c.Notify {
		if t.Slack != nil && t.Slack.Channel != "" && c.Slack == nil {
			p.add(orNode(find(item(list, i), "slack", "channel"), item(list, i)),
				"notify[%d].slack.channel: posting to a channel goes through the Slack app: configure slack: {signingSecret, botToken} (or use slack.url, an incoming webhook)", i)
		}
	}
}

// SlackSecrets reads the slack: section's secrets from env: an unset
// variable is an error naming it, never a value.
func (sc *SlackConfig) SlackSecrets(env func(string) (string, bool)) (signingSecret, botToken string, err error) {
	read := func(field, v string) (string, error) {
		name, _ := notify.EnvName(v)
		x, ok := env(name)
		if !ok || x == "" {
			return "", fmt.Errorf("slack.%s: %s is not set in the environment of agentctl serve", field, name)
		}
		return x, nil
	}
	if signingSecret, err = read("signingSecret", sc.SigningSecret); err != nil {
		return "", "", err
	}
	if botToken, err = read("botToken", sc.BotToken); err != nil {
		return "", "", err
	}
	return signingSecret, botToken, nil
}

func orNode(n, fallback *yaml.Node) *yaml.Node {
	if n != nil {
		return n
	}
	return fallback
}

// keyNode is the key node of key in mapping n, or nil.
func keyNode(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i]
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, strings.Clone(k))
	}
	slices.Sort(keys)
	return keys
}
