package store

import (
	"context"
	"errors"
	"time"
)

// This file holds what agentctl serve needs of a store besides Store:
// API tokens, the event feed in commit order, the inbox of waiting
// calls and counts for metrics. Both backends implement ServerStore.

// Token is the record of an API bearer token. The secret is never
// stored: only its SHA-256 hash, which the server looks up.
type Token struct {
	ID        string // public id: the first 12 hex digits of Hash
	User      string
	Groups    []string // the token user's groups, as given at creation
	Hash      [32]byte // SHA-256 of the secret
	CreatedAt time.Time
	CreatedBy string // the OS user who created it
	ExpiresAt time.Time
	RevokedAt time.Time // zero: not revoked
}

// Session is a browser's sign-in to the inbox. Its secret (the cookie)
// is never stored: only its SHA-256 hash, which the server looks up.
type Session struct {
	Hash      [32]byte // SHA-256 of the cookie's secret
	TokenHash [32]byte // the token signed in with: once it is revoked or expires, so is the session
	User      string
	Groups    []string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// FeedFilter selects the events of a feed: those of run RunID, or of the
// runs of the tree rooted at Root, or, both empty, every event.
type FeedFilter struct {
	RunID string
	Root  string
	Limit int // at most this many; 0: the store's default (1000)
}

// WaitingFilter selects calls waiting for a human across all runs.
type WaitingFilter struct {
	Agent string // only calls of runs of this agent
	Kind  Kind   // only calls waiting for this kind of decision
	After string // cursor: the Cursor of the last call of the previous page
	Limit int    // at most this many; 0: the store's default (100)
}

// WaitingCall is a call waiting for a human, with its run (without its
// State: the inbox needs none of the conversation) and where the next
// page starts.
type WaitingCall struct {
	Call   *Call
	Run    *Run
	Cursor string
}

// Stats counts what metrics report, read in one snapshot.
type Stats struct {
	Runs          map[Status]int // runs by status
	Waiting       map[Kind]int   // calls waiting for a human, by kind
	OldestWaiting time.Time      // when the oldest call waiting for approval was made; zero: none
}

// ErrBadCursor: a cursor that no feed or list of this store made.
var ErrBadCursor = errors.New("bad cursor")

// ServerStore is what agentctl serve needs of a store besides Store.
type ServerStore interface {
	Store
	NotifyStore
	// CreateToken stores a new token.
	CreateToken(ctx context.Context, t *Token) error
	// TokenByHash returns the token whose secret hashes to hash, revoked
	// and expired ones included (the caller checks), or ErrNotFound.
	TokenByHash(ctx context.Context, hash [32]byte) (*Token, error)
	// Tokens returns every token, newest first.
	Tokens(ctx context.Context) ([]*Token, error)
	// RevokeToken revokes the token whose id starts with prefix:
	// ErrNotFound when none does, an *AmbiguousError when several do, an
	// error matching ErrConflict (saying when) when it is already
	// revoked, with the token as it stands.
	RevokeToken(ctx context.Context, prefix string, at time.Time) (*Token, error)

	// CreateSession stores a new session, and forgets the sessions that
	// have expired.
	CreateSession(ctx context.Context, sn *Session) error
	// SessionByHash returns the session whose secret hashes to hash,
	// expired or not (the caller checks), or ErrNotFound.
	SessionByHash(ctx context.Context, hash [32]byte) (*Session, error)
	// DeleteSession forgets a session (sign-out); one not there is no
	// error.
	DeleteSession(ctx context.Context, hash [32]byte) error

	// FirstSeen records key (a signed request's signature, say) as seen
	// at at, forgetting the keys seen before forget, in one transaction,
	// and reports whether key is new: false is a replay of a request
	// already seen, by this process or any other sharing the store. Of
	// two callers recording one key at once, exactly one is told it is
	// new.
	FirstSeen(ctx context.Context, key string, at, forget time.Time) (bool, error)

	// Feed returns events committed after cursor after ("": from the
	// first), in commit order, each with its Cursor. An event is returned
	// only once no transaction that could still commit an event before
	// it is open, so a reader that resumes after the last cursor it saw
	// misses none and repeats none. A cursor the store did not make is
	// ErrBadCursor. Cursors are opaque: on SQLite, the event id; on
	// PostgreSQL, "XID-ID", the writing transaction's id and the event's
	// (see sqlstore.DB.Feed).
	Feed(ctx context.Context, after string, f FeedFilter) ([]*Event, error)
	// FeedAt returns the cursor a reader of the feed starts after to get
	// the events stamped at or after since: the cursor just before the
	// first such event in commit order (events after it stamped earlier
	// come too). With no such event, it is the feed's end (FeedEnd).
	FeedAt(ctx context.Context, since time.Time) (string, error)
	// Requested returns the request recorded under key (see Request)
	// within RequestTTL; ErrNotFound when there is none.
	Requested(ctx context.Context, key string) (*Requested, error)
	// Waiting returns the calls waiting for a human (approval, resume
	// data, or an interrupted call's retry or resolve; not delegations)
	// across every run, oldest first (by creation, then run id, then
	// sequence), with their runs. A cursor the store did not make is
	// ErrBadCursor; a kind no human decides is an error.
	Waiting(ctx context.Context, f WaitingFilter) ([]WaitingCall, error)
	// Stats counts runs and waiting calls.
	Stats(ctx context.Context) (Stats, error)
}

// AuditFilter selects decisions across runs (agentctl audit).
type AuditFilter struct {
	Since, Until time.Time // zero: unbounded; Until is exclusive
	// Agent selects the decisions in runs of this agent and in the runs
	// below them (a supervisor's sub-agents, at any depth); "": any.
	Agent string
	// RootOnly keeps Agent to the runs of that agent itself.
	RootOnly bool
	Limit    int // 0: no limit
	// After is a cursor, the Cursor of the last decision of the previous
	// page: only the decisions listed after it. A cursor the store did
	// not make is ErrBadCursor. Pruning runs between two pages may
	// repeat or skip a decision of theirs.
	After string
}

// Audited is a decision with what it was about: the agent of its run,
// the run's root, the agents from the root's to the run's (Path) and
// the call's tool.
type Audited struct {
	Decision
	Agent, RootID, Tool string
	// Path names the agents from the root of the run's tree to the run.
	// A pruned run's tombstone keeps no path: its root's agent, then its
	// own when they differ.
	Path []string
	// Cursor is where a list that goes on after this decision starts
	// (AuditFilter.After).
	Cursor string
}

// AuditStore reads the audit trail across runs.
type AuditStore interface {
	// Audit returns the decisions f selects, in the order they were made.
	Audit(ctx context.Context, f AuditFilter) ([]*Audited, error)
}
