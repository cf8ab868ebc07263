package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/internal/duration"
	"github.com/agentctl/agentctl/internal/names"
	"github.com/agentctl/agentctl/token"
)

const tokenHelp = `Manage the bearer tokens with which HTTP clients of agentctl serve
authenticate (Authorization: Bearer TOKEN). Tokens live in the database:
whoever administers it makes them, on the database itself.

A token names a user and that user's groups, as given here: never those
of an OS account with the same name. The server grants roles to the user
and its groups (readers, runners, approvers, ... in its configuration).
A token is 256 random bits, shown once by token create; the database
keeps only its SHA-256 hash, and its id (the first 12 hex digits of that
hash) names it in token list and token revoke.`

const tokenCreateHelp = `Create prints a new token alone on stdout, once: store it now (a secret
manager, the bot's environment as AGENTCTL_TOKEN). A note on stderr says
its id and when it expires. It expires after --expires (default 90d; days
accepted, at most 3650d); revoke it sooner with agentctl token revoke ID.

--user and each of --groups is a name: ASCII letters, digits, '.', '_',
'-' and '@', starting with a letter, a digit or '_'. --unicode takes
the names a server with names: {unicode: true} takes (letters of one
script), and refuses one that looks like the user or a group of another
token. docs/server.md#names says more.`

// maxTokenLife is the longest --expires: a token that outlives ten years
// is a mistake.
const maxTokenLife = 3650 * 24 * time.Hour

func (a *app) tokenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token create|list|revoke",
		Short: "Create, list and revoke the API tokens of agentctl serve",
		Long:  tokenHelp,
		Example: `  agentctl token create --user alice --groups ops,oncall
  agentctl token create --user chatops-bot --expires 30d > bot.token
  agentctl token list
  agentctl token revoke 3f9a2c`,
		Args: argsCheck(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.tokenCreateCmd(), a.tokenListCmd(), a.tokenRevokeCmd())
	return cmd
}

func (a *app) tokenCreateCmd() *cobra.Command {
	var user, groups string
	var profile names.Profile
	expires := 90 * 24 * time.Hour
	cmd := &cobra.Command{
		Use:   "create --user NAME [--groups G1,G2] [--expires DURATION]",
		Short: "Create a token and print it, once",
		Long:  tokenCreateHelp,
		Example: `  agentctl token create --user alice --groups ops,oncall
  AGENTCTL_TOKEN=$(agentctl token create --user chatops-bot --expires 30d)`,
		Args: argsCheck(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := newToken(profile, user, groups, cmd.Flags().Changed("groups"), expires)
			if err != nil {
				return usageErr(err)
			}
			db, err := a.store(cmd.Context())
			if err != nil {
				return err
			}
			if err := lookAlikeToken(cmd.Context(), db, t); err != nil {
				return err
			}
			secret, hash := token.New()
			t.Hash, t.CreatedBy = hash, osUser()
			if err := db.CreateToken(cmd.Context(), t); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, secret)
			fmt.Fprintf(a.stderr, "token %s for user %s%s, expires %s; the token, on stdout, is shown once: store it now\n",
				t.ID, t.User, groupsNote(t.Groups), stamp(t.ExpiresAt))
			return nil
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "the user the token authenticates (required)")
	cmd.Flags().StringVar(&groups, "groups", "", "the user's groups, comma-separated")
	cmd.Flags().BoolVar(&profile.Unicode, "unicode", false, "take Unicode names, as a server with names: {unicode: true} does")
	cmd.Flags().Var(duration.Value{D: &expires}, "expires", "how long the token is valid, such as 90d, 12h or 1d12h (at most 3650d)")
	return cmd
}

// newToken checks create's flags and returns the token they describe,
// without its secret.
func newToken(profile names.Profile, user, groups string, groupsGiven bool, expires time.Duration) (*store.Token, error) {
	if user == "" {
		return nil, errors.New("token create needs --user NAME")
	}
	if err := profile.Check(user); err != nil {
		return nil, fmt.Errorf("invalid --user %q: %w", user, err)
	}
	gs := []string{}
	if groupsGiven {
		for _, g := range strings.Split(groups, ",") {
			if err := profile.Check(g); err != nil {
				return nil, fmt.Errorf("invalid --groups %q: group %q: %w", groups, g, err)
			}
			if !contains(gs, g) {
				gs = append(gs, g)
			}
		}
	}
	switch {
	case expires <= 0:
		return nil, fmt.Errorf("invalid --expires %s: want a duration above 0, such as 90d or 12h", duration.Format(expires))
	case expires > maxTokenLife:
		return nil, fmt.Errorf("invalid --expires %s: at most 3650d (ten years)", duration.Format(expires))
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	return &store.Token{User: user, Groups: gs, CreatedAt: now, ExpiresAt: now.Add(expires)}, nil
}

// lookAlikeToken refuses a token whose user or one of whose groups
// looks like the user or a group of another token (names.Confusable:
// only a name beyond ASCII can).
func lookAlikeToken(ctx context.Context, db store.ServerStore, t *store.Token) error {
	toks, err := db.Tokens(ctx)
	if err != nil {
		return err
	}
	mine := append([]string{t.User}, t.Groups...)
	for _, o := range toks {
		for j, other := range append([]string{o.User}, o.Groups...) {
			for i, n := range mine {
				if !names.Confusable(n, other) {
					continue
				}
				flag, whose := "--user", "the user"
				if i > 0 {
					flag = "--groups"
				}
				if j > 0 {
					whose = "a group"
				}
				return usageErr(fmt.Errorf("invalid %s: %q %v", flag, n, &names.LookAlikeError{Name: n, Other: other, Where: whose + " of token " + o.ID}))
			}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func groupsNote(gs []string) string {
	if len(gs) == 0 {
		return " (no groups)"
	}
	return " (groups " + strings.Join(gs, ", ") + ")"
}

// tokenView is a token as token list prints it in JSON: api.Token and its
// state (active, expired or revoked).
type tokenView struct {
	api.Token
	State string `json:"state"`
}

func viewToken(t *store.Token, now time.Time) tokenView {
	v := tokenView{Token: api.Token{ID: t.ID, User: t.User, Groups: t.Groups, CreatedAt: t.CreatedAt, CreatedBy: t.CreatedBy,
		ExpiresAt: t.ExpiresAt}, State: "active"}
	if v.Groups == nil {
		v.Groups = []string{}
	}
	switch {
	case !t.RevokedAt.IsZero():
		r := t.RevokedAt
		v.RevokedAt, v.State = &r, "revoked"
	case !now.Before(t.ExpiresAt):
		v.State = "expired"
	}
	return v
}

func (a *app) tokenListCmd() *cobra.Command {
	var out format
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List tokens, newest first (never their secrets)",
		Long: `List prints every token, newest first: its id, user, groups, when and by
whom it was created, when it expires, and its state (active, expired or
revoked). Secrets are not kept, so never shown.`,
		Example: `  agentctl token list
  agentctl token list -o json | jq -r '.[] | select(.state == "active") | .id'`,
		Args: argsCheck(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.dbOpts.ReadOnly = true // reads only read: see docs/architecture.md
			db, err := a.store(cmd.Context())
			if err != nil {
				return err
			}
			ts, err := db.Tokens(cmd.Context())
			if err != nil {
				return err
			}
			now := time.Now()
			views := make([]tokenView, 0, len(ts))
			for _, t := range ts {
				views = append(views, viewToken(t, now))
			}
			if out == "json" {
				return writeJSON(a.stdout, views)
			}
			if len(views) == 0 {
				fmt.Fprintln(a.stdout, "no tokens (agentctl token create --user NAME makes one)")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tUSER\tGROUPS\tCREATED\tBY\tEXPIRES\tSTATE")
			for _, v := range views {
				groups := strings.Join(v.Groups, ",")
				if groups == "" {
					groups = "-"
				}
				state := v.State
				if v.RevokedAt != nil {
					state += " " + stamp(*v.RevokedAt)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.ID, v.User, groups, stamp(v.CreatedAt), v.CreatedBy,
					stamp(v.ExpiresAt), state)
			}
			return tw.Flush()
		},
	}
	addFormatFlag(cmd, &out)
	return cmd
}

func (a *app) tokenRevokeCmd() *cobra.Command {
	var out format
	cmd := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token: the server refuses it from then on",
		Long: `Revoke revokes the token whose id starts with ID (any unique prefix of
the id token list shows). The server refuses it from its next request.
An unknown id exits 2; a token already revoked exits 4.`,
		Example: `  agentctl token revoke 3f9a2c`,
		Args:    argsCheck(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := strings.ToLower(args[0])
			if id == "" || strings.Trim(id, "0123456789abcdef") != "" || len(id) > 12 {
				return usageErr(fmt.Errorf("invalid token id %q: want the id token list shows (hex digits), or a prefix of it", args[0]))
			}
			db, err := a.store(cmd.Context())
			if err != nil {
				return err
			}
			t, err := db.RevokeToken(cmd.Context(), id, time.Now())
			var amb *store.AmbiguousError
			if errors.As(err, &amb) {
				return usageErr(fmt.Errorf("token id %q is ambiguous: it matches %s; use a longer prefix", id, strings.Join(amb.Matches, ", ")))
			}
			if err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(a.stdout, viewToken(t, time.Now()))
			}
			fmt.Fprintf(a.stdout, "revoked token %s of user %s\n", t.ID, t.User)
			return nil
		},
	}
	addFormatFlag(cmd, &out)
	return cmd
}
