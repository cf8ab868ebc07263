package store

import (
	"context"
	"time"
)

// This file holds retention (agentctl prune, and agentctl serve's
// prune: schedule): deleting the runs that ended long ago, with their
// calls, events and decisions. Both backends implement Pruner.

// DefaultPruneBatch is how many runs Prune deletes in one transaction
// unless PruneOptions.Batch says otherwise.
const DefaultPruneBatch = 500

// PruneOptions select what Prune deletes, and how.
type PruneOptions struct {
	// Before is the cutoff: a tree (a root run and its child runs) is
	// pruned when every one of its runs has ended (completed or failed)
	// and was last updated before it. Required: a zero Before is an
	// error.
	Before time.Time
	// DryRun counts what would be deleted and changes nothing.
	DryRun bool
	// KeepAudit writes, in the transaction that deletes them, one
	// Tombstone per pruned run, with its decisions: AuditStore.Audit
	// goes on listing them.
	KeepAudit bool
	// Batch is the most runs deleted in one transaction (whole trees:
	// a tree larger than Batch goes alone in a transaction of its own);
	// 0: DefaultPruneBatch.
	Batch int
	// Pause is how long Prune waits between two batches so that other
	// writers take their turn; 0: the backend's default (100ms on
	// SQLite, whose writers share one lock; none on PostgreSQL, whose
	// locks are per row); negative: no pause.
	Pause time.Duration
}

// PruneCounts says what Prune deleted (with DryRun, would delete).
type PruneCounts struct {
	Runs, Calls, Events, Decisions int
	// Notifications are the outbox's notifications about the pruned
	// runs, delivered, failed or still pending (the runs ended: they
	// report ended events).
	Notifications int
	// Specs are the spec snapshots no remaining run refers to.
	Specs int
	// Tombstones are the tombstones written (KeepAudit); with DryRun,
	// those that would be.
	Tombstones int
	// Batches is how many transactions committed (0 with DryRun).
	Batches int
	// Kept names the root of an ended tree the cutoff takes in that was
	// kept all the same: on SQLite, the tree holding the newest event
	// (deleting it would give its id again, behind event cursors); it
	// goes once a newer event is written.
	Kept string
}

// Tombstone is what KeepAudit keeps of a pruned run: who started it,
// when, how it ended, and its decisions, each with its run's agent and
// root and its call's tool (AuditStore.Audit lists them with the live
// ones).
type Tombstone struct {
	ID, RootID, Agent string
	Status            Status
	StartedBy         string
	CreatedAt         time.Time
	UpdatedAt         time.Time
	PrunedAt          time.Time
	Decisions         []Audited
}

// Pruner deletes ended runs (retention).
type Pruner interface {
	// Prune deletes the trees o selects, oldest first, with every row
	// that refers to their runs: calls, events, decisions and
	// notifications, then the spec snapshots no run refers to any more.
	// A tree is deleted whole or not at all, only when its root and
	// every child run have ended (completed or failed) before o.Before:
	// a run queued, running, suspended or stalled is never deleted, nor
	// is any run of its tree. Each batch (o.Batch runs) is a transaction
	// of its own, committed before the next begins, so other writers
	// wait at most one batch; a tree that changes meanwhile (a message
	// sent to a completed run) is left alone. On SQLite, the tree
	// holding the newest event is kept until a newer event exists, so
	// that event ids, the feed's cursors, never go back.
	//
	// On an error, or when ctx ends, the batches already committed stay
	// pruned and the counts say what they deleted.
	Prune(ctx context.Context, o PruneOptions) (PruneCounts, error)
	// Vacuum reclaims the space pruning freed. On SQLite it rewrites
	// the file (VACUUM, then a checkpoint that truncates the WAL): it
	// holds the write lock until done, blocking every writer, and needs
	// free disk space as large as the database. On PostgreSQL it runs
	// VACUUM (ANALYZE) on agentctl's tables, which blocks no writer:
	// the space becomes reusable by the database, not returned to the
	// operating system. It returns the database's size before and
	// after, in bytes (0 where the backend does not say).
	Vacuum(ctx context.Context) (before, after int64, err error)
	// Tombstone returns the tombstone KeepAudit left of run id, its
	// decisions in the order they were made, or ErrNotFound.
	Tombstone(ctx context.Context, id string) (*Tombstone, error)
}
