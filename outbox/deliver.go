package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/internal/health"
	"github.com/agentctl/agentctl/notify"
	"github.com/agentctl/agentctl/toolkits"
	"github.com/agentctl/agentctl/toolkits/redact"
)

// Result counts what one Deliver did.
type Result struct {
	Delivered, Retrying, Failed int
}

// Deliver claims the source's due notifications (only those of ids,
// when given) and tries each once: delivered, pending again after a
// backoff, or failed when its target refuses it for good or its attempts
// are used up. It goes on until none is due, or, with ids, once through
// them.
func (b *Outbox) Deliver(ctx context.Context, ids []string) (Result, error) {
	var res Result
	dead, err := b.dead(ctx)
	if err != nil {
		return res, err
	}
	for {
		now := b.o.Now()
		ns, err := b.o.Store.ClaimNotifications(ctx, store.NotifyClaim{Owner: b.o.Owner, Source: b.o.Source, Now: now,
			TTL: b.o.ClaimTTL, IDs: ids, Dead: dead})
		if err != nil || len(ns) == 0 {
			return res, err
		}
		for _, n := range ns {
			if err := b.attempt(ctx, n); err != nil {
				return res, err
			}
			switch n.Status {
			case store.NotifyDelivered:
				res.Delivered++
			case store.NotifyFailed:
				res.Failed++
			default:
				res.Retrying++
			}
		}
		if len(ids) > 0 {
			return res, nil
		}
	}
}

// dead returns the claimants that provably died (Options.Dead) holding
// claims that have not lapsed: what they claimed is claimed again at
// once, not a claim's lifetime later.
func (b *Outbox) dead(ctx context.Context) ([]string, error) {
	if b.o.Dead == nil {
		return nil, nil
	}
	who, err := b.o.Store.NotifyClaimants(ctx, b.o.Now())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, w := range who {
		if w != b.o.Owner && b.o.Dead(w) {
			out = append(out, w)
		}
	}
	return out, nil
}

// attempt sends n once and records how it went.
func (b *Outbox) attempt(ctx context.Context, n *store.Notification) error {
	var t notify.Target
	err := json.Unmarshal(n.Target, &t)
	var send notify.Sender
	var secrets []string
	if err == nil {
		send, secrets, err = b.resolve(t)
	}
	var m *notify.Message
	if err == nil {
		m, err = decode(n)
	}
	if err == nil {
		actx, cancel := context.WithTimeout(ctx, b.o.Timeout)
		err = send(actx, m, b.o.Now())
		cancel()
	}
	if ctx.Err() != nil {
		return ctx.Err() // stopping: the claim lapses, another attempt follows
	}
	now := b.o.Now()
	n.Attempts++
	switch {
	case errors.Is(err, notify.ErrNoBot):
		// Not this process's to send: no attempt is spent, and the
		// server with the Slack app finds it due.
		n.Attempts--
		n.LastError = "waits for agentctl serve, whose configuration has the Slack app (slack: botToken)"
		n.NextAt = now.Add(noBotWait)
	case err == nil:
		n.Status, n.DeliveredAt, n.LastError = store.NotifyDelivered, now, ""
	default:
		n.LastError = b.lastError(ctx, err, secrets, n.RunID)
		wait, again := t.Retry(n.Attempts, b.o.Jitter())
		var se *notify.SendError
		if errors.As(err, &se) && se.RetryAfter > wait {
			wait = min(se.RetryAfter, maxRetryAfter)
		}
		switch {
		case errors.Is(err, notify.ErrPermanent) || !again:
			n.Status = store.NotifyFailed
		default:
			n.NextAt = now.Add(wait)
		}
	}
	ok, err := b.o.Store.Attempted(ctx, b.o.Owner, n, now)
	if err != nil {
		return err
	}
	if !ok {
		b.o.Log.Warn("notification attempt outlived its claim", "id", n.ID)
	}
	lvl := "delivered"
	if n.Status != store.NotifyDelivered {
		lvl = "not delivered"
	}
	b.o.Log.Info("notification "+lvl, "id", n.ID, "type", n.Type, "run", n.RunID, "target", t.Name(), "attempt", n.Attempts,
		"status", string(n.Status), "error", n.LastError)
	return nil
}

// resolve reads a target's placeholders from the environment and
// returns its sender, with the variables read (whose values no error
// may show).
func (b *Outbox) resolve(t notify.Target) (notify.Sender, []string, error) {
	var names []string
	env := func(name string) (string, bool) {
		v, ok := b.o.Env(name)
		if ok && v != "" {
			names = append(names, name)
		}
		return v, ok
	}
	send, err := t.Resolve(env, toolkits.ChildEnv(nil), b.o.Bot)
	return send, names, err
}

// noBotWait is how long a process without the Slack app leaves a
// notification for a Slack channel before it looks at it again.
const noBotWait = 2 * time.Second

// maxRetryAfter is the longest a target's Retry-After defers a retry.
const maxRetryAfter = 24 * time.Hour

// runSecrets names the variables whose values run id's notifications
// must not carry (Options.Secrets): what a failed command printed, say.
func (b *Outbox) runSecrets(ctx context.Context, id string) []string {
	if b.o.Secrets == nil {
		return nil
	}
	r, err := b.o.Store.Run(ctx, id)
	if err != nil {
		return nil
	}
	names, _ := b.o.Secrets(ctx, r)
	return names
}

// lastError is what a notification keeps of a failed attempt's err:
// its text on one line, with the values cut of the target's variables
// (secrets), the outbox's SecretNames and run id's secrets; of what the
// target answered, only a short excerpt, cut before it is shortened
// (notify.SendError.Redacted).
func (b *Outbox) lastError(ctx context.Context, err error, secrets []string, id string) string {
	names := append(append(secrets, b.o.SecretNames...), b.runSecrets(ctx, id)...)
	env := map[string]string{}
	for _, n := range names {
		env[n], _ = b.o.Env(n)
	}
	r := redact.New(names, env)
	var se *notify.SendError
	if errors.As(err, &se) {
		return oneLine(se.Redacted(r))
	}
	return oneLine(r.Cut(err.Error()))
}

// oneLine keeps an error on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// jitter is uniform in [0, 1).
func jitter() float64 { return rand.Float64() }

// Run queues and delivers until ctx ends: at once, then each time wait
// returns (events were committed, or poll passed: retries fall due).
// wait is a backend.Wakeup.
func (b *Outbox) Run(ctx context.Context, wait func(ctx context.Context, d time.Duration) error, poll time.Duration) {
	var classify func(error) error
	if c, ok := b.o.Store.(interface{ Classify(error) error }); ok {
		classify = c.Classify
	}
	queued := &health.Outage{Log: b.o.Log, What: "queue notifications", Classify: classify}
	delivered := &health.Outage{Log: b.o.Log, What: "deliver notifications", Classify: classify}
	for ctx.Err() == nil {
		if _, err := b.Queue(ctx); err != nil && ctx.Err() == nil {
			queued.Failed(slog.LevelWarn, err)
		} else if err == nil {
			queued.Worked()
		}
		if _, err := b.Deliver(ctx, nil); err != nil && ctx.Err() == nil {
			delivered.Failed(slog.LevelWarn, err)
		} else if err == nil {
			delivered.Worked()
		}
		if err := wait(ctx, poll); err != nil && ctx.Err() == nil {
			// The wake-up failed (a lost LISTEN connection): poll.
			t := time.NewTimer(poll)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
}
