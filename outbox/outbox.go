// Package outbox turns the events runs commit into notifications and
// delivers them. The outbox is the event log itself: every transition
// commits its events in its own transaction, so what a notification
// reports is durable as soon as it happened. An Outbox reads the feed
// from its source's cursor (store.NotifyStore), makes one notification
// per event and target its source has for it, and stores them with the
// cursor moved past them in one transaction; each has a stable id, so
// reading an event again queues nothing twice. Delivery claims due
// notifications, sends each once per claim, and records the outcome:
// delivered, a retry at a backoff with jitter, or failed. Delivery is at
// least once: a receiver dedupes on the id (the webhook-id).
package outbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/notify"
	"github.com/agentctl/agentctl/toolkits"
	"github.com/agentctl/agentctl/toolkits/redact"
)

// Options configure an Outbox. Store, Source and Targets are required.
type Options struct {
	Store store.ServerStore
	// Source is whose targets this outbox serves: store.SourceSpec (the
	// runs' agents') or store.SourceServer (agentctl serve's).
	Source string
	// Targets returns the targets of run r's notifications: for
	// SourceSpec, its agent's (engine.Notify); for SourceServer, the
	// configuration's.
	Targets func(ctx context.Context, r *store.Run) ([]notify.Target, error)
	// Describe fills in what a call's notification says of who may
	// decide it and why; nil: nothing.
	Describe func(ctx context.Context, r *store.Run, c *store.Call, m *notify.Call) error
	// Secrets names the environment variables whose values run r's
	// notifications must not carry (engine.Secrets): they are cut from
	// each message as from stored results, in every encoding. nil: none.
	Secrets func(ctx context.Context, r *store.Run) ([]string, error)
	// PublicURL is where approvers reach the inbox, for links; "": none.
	PublicURL string
	// Bot posts to Slack channels (slack: {channel} targets) through the
	// Slack app of agentctl serve's configuration; nil: such a
	// notification is left, unattempted, for a process that has one.
	Bot *notify.Bot
	// SecretNames name more variables whose values no error may show
	// (the Slack app's bot token and signing secret).
	SecretNames []string
	// Env looks up the variables targets name as ${{ env.NAME }};
	// default: none is set.
	Env func(string) (string, bool)
	// Owner names this deliverer in claims: a lease holder
	// (engine.Engine.Holder), which Dead can tell dead.
	Owner string
	// Dead reports whether a claimant provably no longer runs
	// (engine.HolderDead); nil: claims lapse at their end only.
	Dead func(owner string) bool
	// Timeout bounds one attempt (default 10s).
	Timeout time.Duration
	// ClaimTTL is how long a claim keeps other deliverers off (default
	// a minute, and at least twice Timeout).
	ClaimTTL time.Duration
	Now      func() time.Time
	Jitter   func() float64 // in [0, 1); default math/rand/v2
	Log      *slog.Logger
}

// Outbox queues and delivers one source's notifications.
type Outbox struct {
	o Options
}

// New returns an Outbox.
func New(o Options) *Outbox {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	o.ClaimTTL = max(o.ClaimTTL, time.Minute, 2*o.Timeout)
	if o.Env == nil {
		o.Env = func(string) (string, bool) { return "", false }
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Jitter == nil {
		o.Jitter = jitter
	}
	return &Outbox{o: o}
}

// Start sets the source's cursor at the end of the feed when it has
// none yet, so that every event committed after Start returns is
// queued. A server or worker calls it before it takes work: a first
// Queue that ran later would skip what was committed meanwhile.
func (b *Outbox) Start(ctx context.Context) error {
	s := b.o.Store
	if _, ok, err := s.NotifyCursor(ctx, b.o.Source); err != nil || ok {
		return err
	}
	end, err := s.FeedEnd(ctx)
	if err != nil {
		return err
	}
	return s.Enqueue(ctx, b.o.Source, "", end, nil)
}

// Queue turns the events committed past the source's cursor into
// notifications, a page at a time, and returns the ids of those it
// queued (some of which another deliverer may have queued first). A
// source with no cursor yet starts at the end of the feed: it notifies
// what happens from now on.
func (b *Outbox) Queue(ctx context.Context) ([]string, error) {
	s := b.o.Store
	from, ok, err := s.NotifyCursor(ctx, b.o.Source)
	if err != nil {
		return nil, err
	}
	if !ok {
		end, err := s.FeedEnd(ctx)
		if err != nil {
			return nil, err
		}
		return nil, s.Enqueue(ctx, b.o.Source, "", end, nil)
	}
	var ids []string
	for {
		evs, err := s.Feed(ctx, from, store.FeedFilter{})
		if err != nil || len(evs) == 0 {
			return ids, err
		}
		var ns []*store.Notification
		runs := map[string]*store.Run{}
		for _, ev := range evs {
			got, err := b.notifications(ctx, ev, runs)
			if err != nil {
				return ids, fmt.Errorf("notifications of event %d of run %s: %w", ev.ID, ev.RunID, err)
			}
			ns = append(ns, got...)
		}
		to := evs[len(evs)-1].Cursor
		if err := s.Enqueue(ctx, b.o.Source, from, to, ns); err != nil {
			return ids, err
		}
		for _, n := range ns {
			ids = append(ids, n.ID)
		}
		from = to
	}
}

// notifications are those of one event: one per target of its run that
// is for its type.
func (b *Outbox) notifications(ctx context.Context, ev *store.Event, runs map[string]*store.Run) ([]*store.Notification, error) {
	ty, callID, ok := typeOf(ev)
	if !ok {
		return nil, nil
	}
	r, err := b.run(ctx, ev.RunID, runs)
	if err != nil || r == nil {
		return nil, err
	}
	if (ty == notify.Completed || ty == notify.Failed) && r.ParentID != "" {
		return nil, nil // a sub-run's end is its parent's business: the tree's root reports the outcome
	}
	targets, err := b.o.Targets(ctx, r)
	if err != nil {
		return nil, err
	}
	if ty == notify.Escalated {
		targets = b.escalationTargets(ev, targets)
	}
	var out []*store.Notification
	var m *notify.Message
	for _, t := range targets {
		if !t.For(ty) && (ty != notify.Escalated || !t.For(notify.Approval)) {
			continue
		}
		tj, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		id := notificationID(b.o.Source, r.ID, ev.ID, tj)
		if m == nil {
			if m, err = b.message(ctx, ev, ty, r, callID); err != nil {
				return nil, err
			}
		}
		m.ID = id
		mj, err := b.encode(ctx, r, m)
		if err != nil {
			return nil, err
		}
		out = append(out, &store.Notification{ID: id, Source: b.o.Source, Type: string(ty), RunID: r.ID, CallID: callID,
			Target: tj, Message: mj, NextAt: ev.At, CreatedAt: ev.At})
	}
	return out, nil
}

// encode is a message as stored, with the run's secrets cut.
func (b *Outbox) encode(ctx context.Context, r *store.Run, m *notify.Message) ([]byte, error) {
	mj, err := json.Marshal(m)
	if err != nil || b.o.Secrets == nil {
		return mj, err
	}
	names, err := b.o.Secrets(ctx, r)
	if err != nil {
		return nil, err
	}
	cut := redact.String(string(mj), names, toolkits.EnvOf(names))
	if !json.Valid([]byte(cut)) {
		return nil, fmt.Errorf("the message of run %s is not JSON once its secrets are cut", r.ID)
	}
	return []byte(cut), nil
}

// run reads a run once per page.
func (b *Outbox) run(ctx context.Context, id string, runs map[string]*store.Run) (*store.Run, error) {
	if r, ok := runs[id]; ok {
		return r, nil
	}
	r, err := b.o.Store.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	runs[id] = r
	return r, nil
}

// typeOf is what an event is notified as, and the call it is about.
func typeOf(ev *store.Event) (notify.Type, string, bool) {
	var f struct {
		CallID string `json:"callId"`
		Action string `json:"action"`
	}
	switch ev.Type {
	case "tool-call-approval":
		json.Unmarshal(ev.Data, &f)
		return notify.Approval, f.CallID, true
	case "tool-call-suspended":
		json.Unmarshal(ev.Data, &f)
		return notify.Suspend, f.CallID, true
	case "escalated":
		json.Unmarshal(ev.Data, &f)
		return notify.Escalated, f.CallID, true
	case "decision":
		if json.Unmarshal(ev.Data, &f) == nil && f.Action == string(store.Expire) {
			return notify.Expired, f.CallID, true
		}
	case "finish":
		return notify.Completed, "", true
	case "error":
		return notify.Failed, "", true
	}
	return "", "", false
}

// notificationID is stable: the same source, event and target give the
// same id, whoever queues it; the run's id (a ULID) keeps ids of
// different databases apart.
func notificationID(source, run string, event int64, target []byte) string {
	h := sha256.New()
	h.Write([]byte(source + "\x00" + run + "\x00" + strconv.FormatInt(event, 10) + "\x00"))
	h.Write(target)
	return "ntf_" + hex.EncodeToString(h.Sum(nil)[:12])
}
