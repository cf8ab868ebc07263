package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/notify"
	"github.com/agentctl/agentctl/server"
	"github.com/agentctl/agentctl/server/slack"
)

// slackApp is the Slack app of a server's configuration, its secrets
// read from the environment.
type slackApp struct {
	bot     *notify.Bot
	signing string
	names   []string // the variables holding its secrets, for redaction
}

// slackAppOf reads the configuration's slack: section; nil when there is
// none. A variable it names that is unset stops the server from
// starting, named.
func slackAppOf(cfg *server.Config) (*slackApp, error) {
	sc := cfg.Slack
	if sc == nil {
		return nil, nil
	}
	signing, token, err := sc.SlackSecrets(os.LookupEnv)
	if err != nil {
		return nil, inputErr(fmt.Errorf("serve: %s: %w", cfg.Path(), err))
	}
	var names []string
	for _, v := range []string{sc.SigningSecret, sc.BotToken} {
		if n, ok := notify.EnvName(v); ok {
			names = append(names, n)
		}
	}
	return &slackApp{bot: &notify.Bot{APIURL: sc.APIURL, Token: token}, signing: signing, names: names}, nil
}

// handler is POST /slack/interactions, for server.Options.Slack.
func (sa *slackApp) handler(cfg *server.Config, ss store.ServerStore, log *slog.Logger) func(*server.Server) http.Handler {
	if sa == nil {
		return nil
	}
	log.Info("slack app", "interactions", "POST /slack/interactions", "users", len(cfg.Slack.Users))
	return slack.New(slack.Options{SigningSecret: sa.signing, Bot: *sa.bot, Users: cfg.Slack.Users, Store: ss, Log: log})
}
