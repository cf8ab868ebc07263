package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/agentctl/agentctl/engine/store/chain"
	"github.com/agentctl/agentctl/engine/store/sqlstore"
	"github.com/agentctl/agentctl/notify"
	"github.com/agentctl/agentctl/server"
)

// headSigning is how serve or a worker signs the audit chain's head.
type headSigning struct {
	key     ed25519.PrivateKey
	every   time.Duration
	publish *notify.Webhook // nil: none
}

// serveSigning reads serve's audit: section (nil: no signing).
func serveSigning(cfg *server.Config) (*headSigning, error) {
	ac := cfg.Audit
	if ac == nil {
		return nil, nil
	}
	key, err := ac.AuditKey(os.LookupEnv)
	if err != nil {
		return nil, inputErr(err)
	}
	pub, err := ac.PublishWebhook(os.LookupEnv)
	if err != nil {
		return nil, inputErr(err)
	}
	return &headSigning{key: key, every: ac.EveryDuration(), publish: pub}, nil
}

// startSigning signs the head as name until the returned function is
// called (which signs once more); nil hs: nothing.
func startSigning(ctx context.Context, db *sqlstore.DB, hs *headSigning, name string, log *slog.Logger) (stop func()) {
	if hs == nil {
		return func() {}
	}
	s := &chain.Signer{Store: db, Key: hs.key, Name: name, Every: hs.every, Log: log}
	if w := hs.publish; w != nil {
		s.Publish = func(ctx context.Context, h chain.SignedHead) error {
			body, err := json.Marshal(struct {
				Type string `json:"type"`
				chain.SignedHead
			}{"audit.head", h})
			if err != nil {
				return err
			}
			return w.SendJSON(ctx, fmt.Sprintf("audit_%d_%s", h.Seq, h.Key), body, time.Now())
		}
	}
	return s.Start(ctx)
}
