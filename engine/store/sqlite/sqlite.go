// Package sqlite is the embedded Store: one SQLite file in WAL mode,
// through the pure-Go modernc.org/sqlite driver. Writes run in immediate
// transactions, so racing writers queue on the busy timeout instead of
// failing, and every transition is a conditional update.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite" // the database/sql driver "sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentctl/agentctl/engine/store"
)

// Options configure a DB. The zero value is ready to use.
type Options struct {
	// BusyTimeout is how long a write waits for another process's
	// transaction. Default 10s.
	BusyTimeout time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// ReadOnly opens an existing database without writing to it, and
	// without migrating it (agentctl doctor).
	ReadOnly bool
}

// DB is a Store in one SQLite file.
type DB struct {
	db      *sql.DB
	now     func() time.Time
	path    string
	busy    time.Duration
	version int // schema version found on open
	stmts   stmts
}

var _ store.Store = (*DB)(nil)

// Open opens (creating if needed) the database at path and brings its
// schema up to date.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if opts.BusyTimeout == 0 {
		opts.BusyTimeout = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &DB{now: opts.Now, path: path, busy: opts.BusyTimeout}
	if err := s.open(ctx, opts.ReadOnly); err != nil {
		if s.db != nil {
			s.db.Close()
		}
		return nil, fmt.Errorf("open database %s: %w", path, s.Classify(err))
	}
	return s, nil
}

func (s *DB) open(ctx context.Context, readOnly bool) error {
	fi, err := os.Stat(s.path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%w: it is a directory", store.ErrCannotWrite)
	case err != nil && readOnly:
		return err
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %v", store.ErrCannotWrite, err)
	case err != nil:
		// A new database: its directory must exist and be writable.
		if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
			return fmt.Errorf("%w: %v", store.ErrCannotWrite, err)
		}
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", s.busy.Milliseconds()))
	if readOnly {
		q.Add("mode", "ro")
	} else {
		q.Add("_pragma", "journal_mode(wal)")
		q.Add("_pragma", "synchronous(normal)")
	}
	q.Add("_pragma", "foreign_keys(on)")
	q.Add("_txlock", "immediate")
	dsn := "file:" + (&url.URL{Path: s.path}).EscapedPath() + "?" + q.Encode()
	if s.db, err = sql.Open("sqlite", dsn); err != nil {
		return err
	}
	// One connection: a CLI process does one thing at a time, and SQLite
	// serialises writers anyway.
	s.db.SetMaxOpenConns(1)
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&s.version); err != nil {
		return err
	}
	switch {
	case s.version > len(migrations):
		return fmt.Errorf("%w: version %d, this agentctl knows up to %d; upgrade agentctl (the database was left as it was)",
			store.ErrNewerSchema, s.version, len(migrations))
	case readOnly || s.version == len(migrations):
		return nil
	}
	return s.migrate(ctx)
}

// Classify maps SQLite failures in err to the store's sentinels
// (store.ErrBusy, ErrCorrupt, ErrCannotWrite), saying what to do about
// them in place of SQLite's message.
func (s *DB) Classify(err error) error {
	var se *sqlite.Error
	if err == nil || errors.Is(err, store.ErrUnavailable) || !errors.As(err, &se) {
		return err
	}
	var kind error
	var detail string
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		kind = store.ErrBusy
		detail = fmt.Sprintf("another process held its write lock for over %s (AGENTCTL_BUSY_TIMEOUT waits longer); nothing was changed", s.busy)
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		kind = store.ErrCorrupt
		detail = se.Error() + "; agentctl doctor checks it; restore it from a backup"
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL:
		kind = store.ErrCannotWrite
		detail = se.Error() + "; check the permissions and free space of " + filepath.Dir(s.path)
	default:
		return err
	}
	msg := strings.Replace(err.Error(), se.Error(), kind.Error()+": "+detail, 1)
	return &classified{msg: msg, kind: kind, err: err}
}

// classified is a SQLite error with the store's sentinel for it.
type classified struct {
	msg  string
	kind error
	err  error
}

func (e *classified) Error() string   { return e.msg }
func (e *classified) Unwrap() []error { return []error{e.kind, e.err} }

// Close closes the database.
func (s *DB) Close() error {
	s.stmts.close()
	return s.db.Close()
}

// migrations bring the schema from version i to i+1. Never edit one that
// has shipped; append.
var migrations = []string{
	`CREATE TABLE specs (
		hash TEXT PRIMARY KEY,
		body BLOB NOT NULL
	);
	CREATE TABLE runs (
		id            TEXT PRIMARY KEY,
		agent         TEXT NOT NULL,
		status        TEXT NOT NULL,
		input         TEXT NOT NULL,
		output        TEXT NOT NULL DEFAULT '',
		error         TEXT NOT NULL DEFAULT '',
		spec_hash     TEXT NOT NULL REFERENCES specs(hash),
		step          INTEGER NOT NULL DEFAULT 0,
		state         BLOB,
		owner         TEXT,
		lease_expires INTEGER,
		created_at    INTEGER NOT NULL,
		updated_at    INTEGER NOT NULL
	);
	CREATE INDEX runs_status ON runs(status, id);
	CREATE INDEX runs_agent ON runs(agent, id);
	CREATE TABLE calls (
		run_id     TEXT NOT NULL REFERENCES runs(id),
		call_id    TEXT NOT NULL,
		seq        INTEGER NOT NULL,
		step       INTEGER NOT NULL,
		tool       TEXT NOT NULL,
		args       TEXT NOT NULL,
		status     TEXT NOT NULL,
		kind       TEXT NOT NULL DEFAULT '',
		result     TEXT NOT NULL DEFAULT '',
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		PRIMARY KEY (run_id, call_id)
	) WITHOUT ROWID;
	CREATE TABLE decisions (
		id       INTEGER PRIMARY KEY,
		run_id   TEXT NOT NULL REFERENCES runs(id),
		call_id  TEXT NOT NULL,
		action   TEXT NOT NULL,
		by_name  TEXT NOT NULL,
		os_user  TEXT NOT NULL,
		reason   TEXT NOT NULL DEFAULT '',
		at       INTEGER NOT NULL
	);
	CREATE INDEX decisions_run ON decisions(run_id, call_id);`,

	// Approval and suspension semantics: the gate's verdict, suspend
	// payloads, resume data, deadlines, edits, and the event log.
	`ALTER TABLE calls ADD COLUMN gate TEXT NOT NULL DEFAULT '';
	ALTER TABLE calls ADD COLUMN gate_error TEXT NOT NULL DEFAULT '';
	ALTER TABLE calls ADD COLUMN payload TEXT;
	ALTER TABLE calls ADD COLUMN resume TEXT;
	ALTER TABLE calls ADD COLUMN resume_schema TEXT;
	ALTER TABLE calls ADD COLUMN deadline INTEGER;
	CREATE INDEX calls_deadline ON calls(deadline) WHERE status = 'pending' AND deadline IS NOT NULL;
	ALTER TABLE decisions ADD COLUMN args_before TEXT;
	ALTER TABLE decisions ADD COLUMN args_after TEXT;
	ALTER TABLE decisions ADD COLUMN data TEXT;
	CREATE TABLE events (
		id     INTEGER PRIMARY KEY,
		run_id TEXT NOT NULL REFERENCES runs(id),
		type   TEXT NOT NULL,
		data   TEXT NOT NULL,
		at     INTEGER NOT NULL
	);
	CREATE INDEX events_run ON events(run_id, id);`,

	// Supervisor trees: child runs of delegation calls.
	`ALTER TABLE runs ADD COLUMN parent_id TEXT;
	ALTER TABLE runs ADD COLUMN parent_call TEXT NOT NULL DEFAULT '';
	ALTER TABLE runs ADD COLUMN root_id TEXT;
	ALTER TABLE runs ADD COLUMN path TEXT NOT NULL DEFAULT '[]';
	UPDATE runs SET root_id = id;
	CREATE INDEX runs_root ON runs(root_id, id);`,

	// Usage, readable without decoding a run's checkpoint.
	`ALTER TABLE runs ADD COLUMN model_calls INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE runs ADD COLUMN tokens_in INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE runs ADD COLUMN tokens_out INTEGER NOT NULL DEFAULT 0;`,
}

func (s *DB) migrate(ctx context.Context) error {
	var v int
	return s.tx(ctx, func(tx *txn) error {
		// Another process may have migrated while we waited for the lock.
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return err
		}
		for ; v < len(migrations); v++ {
			if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrate to schema %d: %w", v+1, err)
			}
		}
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v))
		return err
	})
}

// tx runs f in an immediate (write) transaction.
func (s *DB) tx(ctx context.Context, f func(*txn) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer s.stmts.prepare(context.WithoutCancel(ctx), s.db)
	if err := f(&txn{tx: tx, c: &s.stmts}); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
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

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }
