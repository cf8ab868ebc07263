package store

import (
	"context"
	"encoding/json"
	"time"
)

// This file holds the outbox of notifications. The events a transition
// commits, in its own transaction, are what notifications report: a
// deliverer reads the feed from its source's cursor, turns the events
// its targets are for into notifications, and stores them, with the
// cursor moved past them, in one transaction. Each notification has a
// stable id (its event's and target's), so a deliverer that reads an
// event again adds nothing. Both backends implement NotifyStore.

// Notification sources: whose notify: targets a notification is for.
const (
	SourceSpec   = "spec"   // the run's agent's (or its ancestors') notify:
	SourceServer = "server" // agentctl serve's configuration
)

// NotificationStatus is where a notification stands.
type NotificationStatus string

// Notification statuses.
const (
	NotifyPending   NotificationStatus = "pending"   // to be sent at NextAt
	NotifyDelivered NotificationStatus = "delivered" // its target took it
	NotifyFailed    NotificationStatus = "failed"    // refused for good, or out of attempts
)

// Notification is one message to one target.
type Notification struct {
	ID     string // stable: the same event and target always give the same id
	Source string // SourceSpec or SourceServer
	Type   string // approval, suspend, expired, completed or failed
	RunID  string
	CallID string // "" for completed and failed
	// Target is the target as configured, as JSON: placeholders such as
	// ${{ env.NAME }} are kept as written, never their values.
	Target json.RawMessage
	// Message is what is sent, as JSON (notify.Message), redacted.
	Message     json.RawMessage
	Status      NotificationStatus
	Attempts    int
	NextAt      time.Time // when the next attempt is due (pending)
	LastError   string    // why the last attempt failed
	CreatedAt   time.Time
	UpdatedAt   time.Time
	DeliveredAt time.Time // zero unless delivered
}

// NotifyClaim asks for due notifications to send.
type NotifyClaim struct {
	Owner  string        // who claims: a deliverer's id
	Source string        // only this source's; "": any
	Now    time.Time     // due at or before Now
	TTL    time.Duration // the claim lapses after this: another deliverer may then try
	Limit  int           // at most this many; 0: 20
	IDs    []string      // only these, when given
	// Dead are claimants known to have died: their claims are free
	// whether or not they have lapsed.
	Dead []string
}

// NotificationFilter selects notifications to list.
type NotificationFilter struct {
	Status NotificationStatus // "": any
	RunID  string             // "": any run; a root's id: its tree's
	Limit  int                // 0: 100
}

// NotifyStore is the outbox of notifications.
type NotifyStore interface {
	// NotifyCursor returns where source's deliverer stands in the feed
	// (a Feed cursor; "" is before the first event), and false when the
	// source has no cursor yet. SourceSpec has one from the schema's
	// creation on.
	NotifyCursor(ctx context.Context, source string) (cursor string, ok bool, err error)
	// FeedEnd returns the cursor of the last event Feed would return
	// now ("" for none): a new source starts there.
	FeedEnd(ctx context.Context) (string, error)
	// Enqueue stores ns, skipping those whose id is stored already, and
	// moves source's cursor from `from` to `to`, in one transaction. The
	// cursor moves only if it still is `from` (or, with from "", if the
	// source has none): a deliverer that raced another adds nothing
	// twice and never moves the cursor back.
	Enqueue(ctx context.Context, source, from, to string, ns []*Notification) error
	// ClaimNotifications claims pending notifications due at c.Now whose
	// claim is free or lapsed, oldest due first, for c.Owner until
	// c.Now+c.TTL: no other deliverer claims them meanwhile.
	ClaimNotifications(ctx context.Context, c NotifyClaim) ([]*Notification, error)
	// NotifyClaimants returns who holds claims on pending notifications
	// that have not lapsed at now (a deliverer may find some dead).
	NotifyClaimants(ctx context.Context, now time.Time) ([]string, error)
	// Attempted records the outcome of owner's attempt at n: n.Status,
	// n.Attempts, n.LastError, n.NextAt and n.DeliveredAt as the caller
	// set them, and frees the claim. It reports false, changing nothing,
	// when owner no longer holds the claim (it lapsed and another took
	// it) or n is no longer pending.
	Attempted(ctx context.Context, owner string, n *Notification, now time.Time) (bool, error)
	// Notifications returns notifications, newest first.
	Notifications(ctx context.Context, f NotificationFilter) ([]*Notification, error)
	// Redeliver makes the notification whose id starts with prefix
	// pending again, due at now, with no attempts and its claim free:
	// ErrNotFound when none does, an *AmbiguousError when several do.
	Redeliver(ctx context.Context, prefix string, now time.Time) (*Notification, error)
}
