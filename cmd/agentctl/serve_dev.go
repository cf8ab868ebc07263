package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/internal/names"
	"github.com/agentctl/agentctl/server"
	"github.com/agentctl/agentctl/token"
)

// devTokenTTL is how long serve --dev's token lasts.
const devTokenTTL = 12 * time.Hour

// devConfig is serve --dev's configuration: the specs of -f, loopback
// only (127.0.0.1, a free port, unless --listen names another loopback
// address), and the OS user who runs it in every role. It reads no file.
func devConfig(f serveFlags, flagged func(string) bool) (*server.Config, error) {
	if flagged("config") {
		return nil, usageErr(errors.New("serve --dev reads no configuration: drop --config, or drop --dev"))
	}
	if len(f.files) == 0 {
		return nil, usageErr(errors.New("serve --dev needs the specs to serve: -f FILE|DIR"))
	}
	if f.insecure || f.tlsCert != "" || f.tlsKey != "" {
		return nil, usageErr(errors.New("serve --dev serves loopback only: it takes neither --insecure-listen nor TLS"))
	}
	listen := cmp.Or(f.listen, "127.0.0.1:0")
	if err := server.CheckListen(listen, false, false); err != nil {
		return nil, usageErr(fmt.Errorf("serve --dev serves loopback only: %w", err))
	}
	var b strings.Builder
	b.WriteString("specs:\n")
	for _, file := range f.files {
		abs, err := filepath.Abs(file)
		if err != nil {
			return nil, usageErr(fmt.Errorf("-f %s: %w", file, err))
		}
		fmt.Fprintf(&b, "  - %s\n", strconv.Quote(abs))
	}
	me := strconv.Quote(osUser())
	fmt.Fprintf(&b, "listen: %s\n", strconv.Quote(listen))
	if f.socket != "" {
		fmt.Fprintf(&b, "socket: %s\n", strconv.Quote(f.socket))
	}
	for _, role := range []string{"readers", "runners", "authors", "approvers", "delegates"} {
		fmt.Fprintf(&b, "%s: [%s]\n", role, me)
	}
	cfg, err := server.ParseConfig("(serve --dev)", []byte(b.String()))
	if err != nil {
		return nil, usageErr(fmt.Errorf("serve --dev: %w", err))
	}
	if flagged("concurrency") {
		cfg.Concurrency = f.concurrency
	}
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 4
	}
	return cfg, nil
}

// devWelcome makes a token for the OS user and says where to go: the
// inbox's address and the token to sign in with, on standard output.
func (a *app) devWelcome(ctx context.Context, db store.ServerStore, base string) error {
	t, err := newToken(names.Profile{}, osUser(), "", false, devTokenTTL)
	if err != nil {
		return err
	}
	secret, hash := token.New()
	t.Hash, t.CreatedBy = hash, osUser()
	if err := db.CreateToken(ctx, t); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "dev mode: loopback only; %s holds every role\n", t.User)
	fmt.Fprintf(a.stdout, "inbox:    %s/ (sign in with the token)\n", base)
	fmt.Fprintf(a.stdout, "token:    %s (expires %s)\n", secret, stamp(t.ExpiresAt))
	fmt.Fprintf(a.stdout, "CLI:      AGENTCTL_TOKEN=%s agentctl --server %s list\n", secret, base)
	return nil
}
