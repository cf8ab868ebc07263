// Package sqlstore is the store.Store both SQL backends share: the
// queries, transitions and checks of the call ledger over database/sql,
// with a Dialect for what differs (placeholders, locking, errors, the
// integrity check). Packages sqlite and postgres open one.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// Dialect is what a backend does its own way.
type Dialect struct {
	// Name is the backend's name, as doctor reports it.
	Name string
	// Dollar numbers placeholders ($1, $2, ...); queries are written
	// with ?.
	Dollar bool
	// LockRun locks a run's row first in the transactions that read its
	// calls before changing it, so that they serialise per run (Postgres;
	// SQLite's immediate transactions serialise all writers already).
	LockRun bool
	// SkipLocked makes workers skip runs another worker is claiming
	// (FOR UPDATE SKIP LOCKED) instead of waiting for them.
	SkipLocked bool
	// WriteCTE: statements may write in WITH (PostgreSQL), and
	// ClaimStart is one statement; else it is one transaction.
	WriteCTE bool
	// Cache keeps prepared statements (SQLite, one connection; pgx
	// caches its own per connection).
	Cache bool
	// XID: each event row keeps the id of the transaction that wrote it
	// (PostgreSQL's xid8), and the feed orders events by it, since
	// identity values are not handed out in commit order. Without it,
	// the event id is in commit order (SQLite: one writer at a time).
	XID bool
	// Classify maps the driver's errors to the store's sentinels.
	Classify func(error) error
	// CommitUnknown says whether a failed COMMIT may have taken effect
	// (the connection broke after it was sent); nil: never (SQLite's
	// COMMIT either commits or fails).
	CommitUnknown func(error) bool
	// TxID, when set, is an expression of the transaction's id as text,
	// which a transaction that locks a run (LockRun) reads with the lock;
	// TxStatus, given that id, says what became of it: committed, aborted
	// or "in progress" (PostgreSQL's pg_xact_status). With both, such a
	// transaction's COMMIT whose answer is lost is settled by asking, for
	// up to CommitWait, before it is reported unknown (a decision's, a
	// suspension's, a claim's; others are reported unknown at once).
	TxID, TxStatus string
	CommitWait     time.Duration
	// IdleConns, when set, is how many idle connections the pool keeps:
	// a failure classified as a lost connection (store.ErrCannotConnect)
	// closes them all first, since the database's restart or a dropped
	// network killed them too, and each would fail once more.
	IdleConns int
	// Integrity runs the backend's own consistency check and returns the
	// problems found (none: healthy).
	Integrity func(context.Context, *sql.DB) ([]string, error)
	// ChainLock, when set, is run before a transaction appends to the
	// audit chain, and serialises the appends (PostgreSQL: a transaction
	// advisory lock); SQLite's writers are serialised already.
	ChainLock string
	// Journal describes the journal (doctor).
	Journal func(context.Context, *sql.DB) string
}

// DB is a Store over a SQL database.
type DB struct {
	db      *sql.DB
	d       Dialect
	now     func() time.Time
	path    string // where it is, for messages
	version int    // schema version found on open
	known   int    // schema version this build writes
	from    int    // schema version this open migrated from (version if none)
	stmts   stmts
	rebinds sync.Map // query → query with $n placeholders
}

var _ store.ServerStore = (*DB)(nil)

// Opened describes a database a backend opened.
type Opened struct {
	// Path is where it is, for messages (secrets removed).
	Path string
	// Version is its schema version; Known the latest this build knows.
	Version, Known int
	// From is the version this open migrated from, as found under the
	// migration's lock (another process may have migrated first): Version
	// when it did not migrate, 0 for a database it created.
	From int
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// New returns a Store over db.
func New(db *sql.DB, d Dialect, o Opened) *DB {
	if o.Now == nil {
		o.Now = time.Now
	}
	if d.Classify == nil {
		d.Classify = func(err error) error { return err }
	}
	return &DB{db: db, d: d, now: o.Now, path: o.Path, version: o.Version, known: o.Known, from: o.From}
}

// Schema returns the schema version found on open and the latest this
// build knows; a database opened only to read is not migrated.
func (s *DB) Schema() (found, known int) { return s.version, s.known }

// UpgradedFrom returns the schema version this open migrated the
// database from: the version found under the migration's lock, so that
// of two processes racing to migrate, only the one that did says so.
// It is the found version when the open did not migrate.
func (s *DB) UpgradedFrom() int { return s.from }

// SQL returns the underlying database, for the backend's own work
// (migrations, copying).
func (s *DB) SQL() *sql.DB { return s.db }

// Path is where the database is, as given to open it (secrets removed).
func (s *DB) Path() string { return s.path }

// Dialect is the backend's name.
func (s *DB) Dialect() string { return s.d.Name }

// Classify maps driver failures in err to the store's sentinels
// (store.ErrBusy, ErrCorrupt, ErrCannotWrite, ...), saying what to do.
func (s *DB) Classify(err error) error {
	c := s.d.Classify(err)
	if s.d.IdleConns > 0 && errors.Is(c, store.ErrCannotConnect) {
		s.db.SetMaxIdleConns(0) // closes the idle ones
		s.db.SetMaxIdleConns(s.d.IdleConns)
	}
	return c
}

// Close closes the database.
func (s *DB) Close() error {
	s.stmts.close()
	return s.db.Close()
}

// rebind writes a query's placeholders as the dialect wants them.
func (s *DB) rebind(q string) string {
	if !s.d.Dollar || !strings.Contains(q, "?") {
		return q
	}
	if v, ok := s.rebinds.Load(q); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	s.rebinds.Store(q, b.String())
	return b.String()
}

// tx runs f in a write transaction (immediate, on SQLite).
func (s *DB) tx(ctx context.Context, f func(*txn) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if s.d.Cache {
		defer s.stmts.prepare(context.WithoutCancel(ctx), s.db)
	}
	t := &txn{tx: tx, s: s}
	err = f(t)
	if err == nil {
		err = t.appendChain(ctx)
	}
	if err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		if s.d.CommitUnknown != nil && s.d.CommitUnknown(err) {
			return s.settleCommit(ctx, t.xid, err)
		}
		return err
	}
	return nil
}

// settleCommit finds out what became of a transaction whose COMMIT's
// answer was lost (err): nil when it committed; a failure that changed
// nothing when it aborted; an *OutcomeUnknownError when the database
// cannot tell within CommitWait (unreachable, or still in progress).
func (s *DB) settleCommit(ctx context.Context, id sql.NullString, err error) error {
	if !id.Valid || s.d.TxStatus == "" {
		return &OutcomeUnknownError{Err: err}
	}
	ctx = context.WithoutCancel(ctx)
	deadline := time.Now().Add(s.d.CommitWait)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		var st sql.NullString
		if qerr := s.db.QueryRowContext(ctx, s.rebind(s.d.TxStatus), id.String).Scan(&st); qerr == nil {
			switch st.String {
			case "committed":
				return nil
			case "aborted":
				return fmt.Errorf("%w: the connection broke at the commit, which did not take effect; nothing was changed (%v)",
					store.ErrCannotConnect, err)
			}
		}
		if time.Now().Add(wait).After(deadline) {
			return &OutcomeUnknownError{Err: err}
		}
		time.Sleep(wait)
	}
}

// OutcomeUnknownError is a COMMIT whose outcome is unknown: the
// connection broke after it was sent. It matches store.ErrOutcomeUnknown
// and unwraps to the driver's error.
type OutcomeUnknownError struct{ Err error }

func (e *OutcomeUnknownError) Error() string {
	return fmt.Sprintf("%v (%v)", store.ErrOutcomeUnknown, e.Err)
}

// Is makes an OutcomeUnknownError match store.ErrOutcomeUnknown.
func (e *OutcomeUnknownError) Is(target error) bool { return target == store.ErrOutcomeUnknown }

// Unwrap returns the driver's error.
func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// lockRun takes a run's row lock, where the dialect needs it.
func (t *txn) lockRun(ctx context.Context, runID string) error {
	if !t.s.d.LockRun {
		return nil
	}
	if t.s.d.TxID == "" {
		_, err := t.tx.ExecContext(ctx, t.s.rebind(`SELECT 1 FROM runs WHERE id = ? FOR UPDATE`), runID)
		return err
	}
	// The lock reads the transaction's id in the same round trip: no
	// statement more on a write's path.
	err := t.tx.QueryRowContext(ctx, t.s.rebind(`SELECT `+t.s.d.TxID+` FROM runs WHERE id = ? FOR UPDATE`), runID).Scan(&t.xid)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// msOrNil stores a zero time as NULL.
func msOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

// text stores an empty JSON value as NULL.
func text(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// flag stores a boolean as 0 or 1 (an INTEGER column on both backends).
func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// EventFieldsMigration is the schema migration, the same on both
// backends, after which an event row's data holds the event's own fields
// only (store.Event.Data): rows written before it hold them behind a '@'
// mark, or, older still, behind the envelope the engine then wrote
// ({"type":...,"runId":...,}); both are cut off.
const EventFieldsMigration = `UPDATE events SET data = CASE
		WHEN substr(data, 1, 2) = '@{' THEN substr(data, 2)
		WHEN substr(data, length('{"type":"' || type || '","runId":"' || run_id || '"') + 1, 1) = ','
			THEN '{' || substr(data, length('{"type":"' || type || '","runId":"' || run_id || '"') + 2)
		ELSE '{}' END
	WHERE substr(data, 1, 2) = '@{'
		OR substr(data, 1, length('{"type":"' || type || '","runId":"' || run_id || '"')) = '{"type":"' || type || '","runId":"' || run_id || '"';`
