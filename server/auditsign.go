package server

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/engine/store/chain"
	"github.com/agentctl/agentctl/internal/duration"
	"github.com/agentctl/agentctl/notify"
)

// AuditConfig is the audit: section: the key that signs the audit
// chain's head, how often, and where else each signed head goes
// (docs/audit.md).
type AuditConfig struct {
	// SigningKey is the Ed25519 private key (PEM, as agentctl audit
	// keygen writes audit.key), ${{ env.NAME }}: never in the file,
	// never stored.
	SigningKey string `yaml:"signingKey"`
	// Every is how often the head is signed, if it changed: a duration
	// of 1s or more (default 5m). It is signed at shutdown too.
	Every string `yaml:"every"`
	// Publish, when set, is a webhook each signed head is posted to
	// (Standard Webhooks, signed with its secret): a copy of the heads
	// out of the database administrators' reach.
	Publish *AuditPublish `yaml:"publish"`

	every time.Duration // parsed
}

// AuditPublish is a webhook for signed heads.
type AuditPublish struct {
	URL    string `yaml:"url"`    // or ${{ env.NAME }}
	Secret string `yaml:"secret"` // ${{ env.NAME }}: whsec_...
	// AllowPrivate lets it post to an internal address (loopback,
	// private network), as a notify target's allowPrivate.
	AllowPrivate bool `yaml:"allowPrivate"`
}

// DefaultAuditEvery is how often the head is signed unless audit.every
// says otherwise.
const DefaultAuditEvery = 5 * time.Minute

// checkAudit validates the audit: section.
func (c *Config) checkAudit(p *checker, root *yaml.Node) {
	ac := c.Audit
	if ac == nil {
		return
	}
	n := find(root, "audit")
	if _, ok := notify.EnvName(ac.SigningKey); !ok {
		p.add(orNode(find(n, "signingKey"), n), "audit.signingKey: a secret: write it as ${{ env.NAME }} and set NAME, where agentctl serve runs, to the key agentctl audit keygen wrote (audit.key)")
	}
	ac.every = DefaultAuditEvery
	if ac.Every != "" {
		d, err := duration.Parse(ac.Every)
		if err != nil || d < time.Second {
			p.add(find(n, "every"), "audit.every %q: want a duration of 1s or more, such as 5m", ac.Every)
		}
		ac.every = d
	}
	if pb := ac.Publish; pb != nil {
		if pb.URL == "" {
			p.add(orNode(find(n, "publish"), n), "audit.publish: url is required")
		}
		if _, ok := notify.EnvName(pb.Secret); !ok {
			p.add(orNode(find(n, "publish", "secret"), n), "audit.publish.secret: a secret: write it as ${{ env.NAME }}")
		}
	}
}

// EveryDuration is how often the head is signed.
func (ac *AuditConfig) EveryDuration() time.Duration {
	if ac.every <= 0 {
		return DefaultAuditEvery
	}
	return ac.every
}

// AuditKey reads the signing key from env: an unset variable or a bad
// key is an error naming the variable, never quoting its value.
func (ac *AuditConfig) AuditKey(env func(string) (string, bool)) (ed25519.PrivateKey, error) {
	name, _ := notify.EnvName(ac.SigningKey)
	v, ok := env(name)
	if !ok || v == "" {
		return nil, fmt.Errorf("audit.signingKey: %s is not set in the environment of agentctl serve", name)
	}
	k, err := chain.ParsePrivateKey([]byte(v))
	if err != nil {
		return nil, fmt.Errorf("audit.signingKey: %s: %w", name, err)
	}
	return k, nil
}

// PublishWebhook is the webhook signed heads go to, its secrets read
// from env (nil: none configured).
func (ac *AuditConfig) PublishWebhook(env func(string) (string, bool)) (*notify.Webhook, error) {
	pb := ac.Publish
	if pb == nil {
		return nil, nil
	}
	w := &notify.Webhook{URL: pb.URL, AllowPrivate: pb.AllowPrivate}
	if name, ok := notify.EnvName(pb.URL); ok {
		v, set := env(name)
		if !set || v == "" {
			return nil, fmt.Errorf("audit.publish.url: %s is not set in the environment of agentctl serve", name)
		}
		w.URL, w.Name = v, "[env."+name+"]"
	}
	name, _ := notify.EnvName(pb.Secret)
	v, ok := env(name)
	if !ok || v == "" {
		return nil, fmt.Errorf("audit.publish.secret: %s is not set in the environment of agentctl serve", name)
	}
	key, err := notify.ParseSecret(v)
	if err != nil {
		return nil, fmt.Errorf("audit.publish.secret: %s: %w", name, err)
	}
	w.Key = key
	return w, nil
}
