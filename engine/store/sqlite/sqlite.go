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
	"io"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite" // the database/sql driver "sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlstore"
	"github.com/agentctl/agentctl/internal/filekind"
)

// Options configure a DB. The zero value is ready to use.
type Options struct {
	// BusyTimeout is how long a write waits for another process's
	// transaction. Default 10s.
	BusyTimeout time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// ReadOnly opens an existing database without writing to it, and
	// without migrating it. A reader that does not own the file, or may
	// not write its directory, reads it as it is on disk while no process
	// has it open, creating no -wal or -shm file: such a connection does
	// not see later writes (open again to see them).
	ReadOnly bool
}

// busy is the busy timeout, its default if unset.
func (o Options) busy() time.Duration {
	if o.BusyTimeout == 0 {
		return 10 * time.Second
	}
	return o.BusyTimeout
}

// Memory, as a path, opens an empty database in memory that lives as
// long as the DB: what a read of a database that does not exist yet sees.
const Memory = ":memory:"

// DB is a Store in one SQLite file.
type DB = sqlstore.DB

// Writable reports whether this process may write the database at path
// in place, upgrading its schema: it owns the file (that a symbolic link
// names), the file's mode lets its owner write it (root included), the
// file system is mounted to be written, and it may write the file's
// directory (where the -wal and -shm files go).
func Writable(path string) bool { return upgradable(path) }

// Open opens (creating if needed) the database at path and brings its
// schema up to date.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	o := &opener{path: path, busy: opts.busy(), writable: writable}
	db, version, err := o.openWaiting(ctx, opts.ReadOnly)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, o.classify(err))
	}
	d := sqlstore.Dialect{
		Name:      "sqlite",
		Cache:     true,
		Classify:  o.classify,
		Integrity: integrity,
		Journal:   func(context.Context, *sql.DB) string { return journal(path) },
	}
	return sqlstore.New(db, d, sqlstore.Opened{Path: path, Version: version, Known: len(migrations), From: o.from, Now: opts.Now}), nil
}

// openWaiting is open, again while SQLite answers busy, for up to the
// busy timeout: processes opening a new database at once (two workers
// started together) meet locks that SQLite's own busy wait does not
// cover, such as a switch to WAL or its recovery.
func (o *opener) openWaiting(ctx context.Context, readOnly bool) (*sql.DB, int, error) {
	deadline := time.Now().Add(o.busy)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		db, version, err := o.open(ctx, readOnly)
		if err == nil {
			return db, version, nil
		}
		if db != nil {
			db.Close()
		}
		var busy *store.BusyError
		if !errors.As(o.classify(err), &busy) || time.Now().Add(wait).After(deadline) {
			return nil, 0, err
		}
		select {
		case <-ctx.Done():
			return nil, 0, err
		case <-time.After(wait + time.Duration(rand.Int64N(int64(wait)))):
		}
	}
}

// opener opens one database file.
type opener struct {
	path string
	busy time.Duration
	// writable reports whether this process may leave -wal and -shm
	// files beside the database (the package's writable).
	writable func(path string) bool
	// beforeConnect, when set, runs just before the connection opens:
	// tests race the owner's close against it.
	beforeConnect func()
	// from is the version open found, under the migration's lock when
	// it migrated.
	from int
	// mode is how open connected.
	mode connection
}

func (o *opener) open(ctx context.Context, readOnly bool) (*sql.DB, int, error) {
	fi, err := os.Stat(o.path)
	switch {
	case o.path == Memory:
		readOnly = false // nothing on disk to protect
	case err == nil && fi.IsDir():
		return nil, 0, fmt.Errorf("%w: it is a directory", store.ErrCannotWrite)
	case err == nil && !fi.Mode().IsRegular():
		// A FIFO would block the open; a device is no database file.
		return nil, 0, fmt.Errorf("%w: it is %s, not a database file", store.ErrUnavailable, filekind.Of(fi.Mode()))
	case err != nil && readOnly:
		return nil, 0, err
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, 0, fmt.Errorf("%w: %v", store.ErrCannotWrite, err)
	case err != nil:
		// A new database: its directory must exist and be writable.
		if err := os.MkdirAll(filepath.Dir(o.path), 0o700); err != nil {
			return nil, 0, fmt.Errorf("%w: %v", store.ErrCannotWrite, err)
		}
		if err := create(o.path); err != nil {
			return nil, 0, fmt.Errorf("%w: %v", store.ErrCannotWrite, err)
		}
	}
	// A reader that does not own the database, or may not write its
	// directory, creates no -wal or -shm, which it may not be allowed to
	// create, or would leave behind, owned by it, for the owner to trip
	// on: it reads the owner's -wal and -shm while they exist, and the
	// file as it is on disk while no process has it open (the last one
	// to close it removed them). It holds a reader's lock meanwhile, so
	// that the last writer cannot remove them between the look and the
	// open.
	mode := readWrite
	if readOnly {
		mode = readShared
	}
	if readOnly && !o.writable(o.path) {
		release, err := holdReader(ctx, o.path, o.busy)
		if err != nil {
			return nil, 0, err
		}
		defer release()
		mode = readForeign
		if !exists(o.path + "-wal") {
			mode = readAsIs
		}
	}
	if o.beforeConnect != nil {
		o.beforeConnect()
	}
	o.mode = mode
	db, version, err := o.connect(ctx, mode)
	var se *sqlite.Error
	if err != nil && mode == readForeign && errors.As(err, &se) && (se.Code()&0xff == sqlite3.SQLITE_READONLY || se.Code()&0xff == sqlite3.SQLITE_CANTOPEN) {
		// The owner's -wal is there without its -shm, which this
		// reader may not create: read the file as it is.
		if db != nil {
			db.Close()
		}
		o.mode = readAsIs
		db, version, err = o.connect(ctx, readAsIs)
	}
	if err != nil {
		return db, 0, err
	}
	switch {
	case version > len(migrations):
		return db, 0, fmt.Errorf("%w: version %d, this agentctl knows up to %d; upgrade agentctl (the database was left as it was)",
			store.ErrNewerSchema, version, len(migrations))
	case readOnly || version == len(migrations):
		o.from = version
		return db, version, nil
	}
	from, err := migrate(ctx, db)
	if err != nil {
		return db, 0, err
	}
	o.from = from
	return db, len(migrations), nil
}

// create makes the empty file of a new database, mode 0600: SQLite
// would create it 0644 (less the umask), for every local user to read
// every run. Its -wal and -shm take the file's mode when SQLite creates
// them. A file another process created meanwhile is left as it is.
func create(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// connection is how a connection opens the database file.
type connection int

const (
	// readWrite reads and writes, in WAL mode.
	readWrite connection = iota
	// readShared reads a database this process owns: it may create the
	// -wal and -shm, which it then owns.
	readShared
	// readForeign reads another's database through its -wal and -shm,
	// creating neither and writing neither.
	readForeign
	// readAsIs reads the file as it is on disk (immutable), with no -wal
	// or -shm: it does not see later writes.
	readAsIs
)

// connect opens a connection to the database and reads its schema
// version.
func (o *opener) connect(ctx context.Context, mode connection) (*sql.DB, int, error) {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.busy.Milliseconds()))
	switch mode {
	case readAsIs:
		q.Add("mode", "ro")
		q.Add("immutable", "1")
	case readForeign:
		q.Add("mode", "ro")
		q.Add("readonly_shm", "1")
	case readShared:
		q.Add("mode", "ro")
	default:
		q.Add("_pragma", "journal_mode(wal)")
		q.Add("_pragma", "synchronous(normal)")
	}
	q.Add("_pragma", "foreign_keys(on)")
	q.Add("_txlock", "immediate")
	dsn := "file:" + (&url.URL{Path: o.path}).EscapedPath() + "?" + q.Encode()
	if o.path == Memory {
		dsn = "file::memory:?" + q.Encode()
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, 0, err
	}
	// One connection: a CLI process does one thing at a time, and SQLite
	// serialises writers anyway.
	db.SetMaxOpenConns(1)
	var version int
	err = db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version)
	return db, version, err
}

// journal reads the journal mode from the file's header, as a reader
// that opened it as it is on disk cannot ask SQLite: bytes 18 and 19 are
// 2 in WAL mode, 1 for a rollback journal.
func journal(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	var h [20]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return "unknown"
	}
	switch h[18] {
	case 1:
		return "delete"
	case 2:
		return "wal"
	}
	return "unknown"
}

// exists reports whether a file exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// integrity is SQLite's integrity_check.
func integrity(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check(20)")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		if v != "ok" {
			out = append(out, v)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	fk, err := db.QueryContext(ctx, `SELECT "table" || ' row ' || rowid || ' refers to a missing ' || parent FROM pragma_foreign_key_check`)
	if err != nil {
		return nil, err
	}
	defer fk.Close()
	for fk.Next() {
		var v string
		if err := fk.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, fk.Err()
}

// classify maps SQLite failures in err to the store's sentinels
// (store.ErrBusy, ErrCorrupt, ErrCannotWrite), saying what to do about
// them in place of SQLite's message.
func (o *opener) classify(err error) error {
	var se *sqlite.Error
	if err == nil || errors.Is(err, store.ErrUnavailable) || !errors.As(err, &se) {
		return err
	}
	var kind error
	var detail string
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		kind = &store.BusyError{Waited: o.busy}
		detail = fmt.Sprintf("another process held its write lock for over %s; nothing was changed", o.busy)
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		kind = store.ErrCorrupt
		detail = se.Error()
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL:
		kind = store.ErrCannotWrite
		detail = se.Error() + "; check the permissions and free space of " + filepath.Dir(o.path)
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

	// Workers: runs decided detached wait for one; workers announce
	// themselves.
	`ALTER TABLE runs ADD COLUMN ready INTEGER NOT NULL DEFAULT 0;
	CREATE INDEX runs_ready ON runs(ready) WHERE ready = 1;
	CREATE TABLE workers (
		id          TEXT PRIMARY KEY,
		host        TEXT NOT NULL,
		pid         INTEGER NOT NULL,
		agent       TEXT NOT NULL DEFAULT '',
		concurrency INTEGER NOT NULL,
		lease_ms    INTEGER NOT NULL,
		started_at  INTEGER NOT NULL,
		seen_at     INTEGER NOT NULL,
		done        INTEGER NOT NULL DEFAULT 0
	);`,

	// Approver policy: who started a run; how many approvals a call
	// needs and has.
	`ALTER TABLE runs ADD COLUMN started_by TEXT NOT NULL DEFAULT '';
	ALTER TABLE calls ADD COLUMN needed INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE calls ADD COLUMN approvals INTEGER NOT NULL DEFAULT 0;`,

	// An event's data holds its own fields only; its type and run are
	// columns of their own.
	sqlstore.EventFieldsMigration,

	// Structured results: a call's result may be a JSON object (exec,
	// http), flagged as such; results written before, and the results
	// of tool-result events, that have an exec or http result's shape
	// become objects.
	resultObjectMigration,

	// The server (agentctl serve): API tokens, stored as SHA-256 hashes;
	// how a decider was identified; the inbox of calls waiting for a
	// human, oldest first, paged from an index.
	`CREATE TABLE tokens (
		id          TEXT PRIMARY KEY,
		user_name   TEXT NOT NULL,
		user_groups TEXT NOT NULL DEFAULT '[]',
		hash        TEXT NOT NULL UNIQUE,
		created_at  INTEGER NOT NULL,
		created_by  TEXT NOT NULL,
		expires_at  INTEGER NOT NULL,
		revoked_at  INTEGER
	);
	ALTER TABLE decisions ADD COLUMN via TEXT NOT NULL DEFAULT '';
	CREATE INDEX calls_waiting ON calls(created_at, run_id, seq)
		WHERE status IN ('pending', 'interrupted') AND kind != 'delegation';`,

	// Notifications: the outbox of deliveries turned from the event
	// feed, and where each source's deliverer stands in it.
	sqlstore.NotifyMigration("TEXT", sqlstore.FeedEndQuery(false, "events")),

	// Signed requests already seen (Slack's interactions): a replay is
	// refused by every server sharing the database.
	sqlstore.ReplayMigration("TEXT"),

	// Timings: when each call started and finished executing; the
	// tombstones agentctl prune --keep-audit leaves.
	sqlstore.TimingsMigration("TEXT", "INTEGER"),

	// Smaller runs: a root run, which stores no root_id (those of
	// early versions stored their own id: no longer), has no entry in
	// runs_root; events move to event_rows, their types stored as
	// one-letter codes, and events is a view of them with every type by
	// name, into which an agentctl of schema 12 still running writes as
	// it did.
	`DROP INDEX runs_root;
	UPDATE runs SET root_id = NULL WHERE root_id = id;
	CREATE INDEX runs_root ON runs(root_id, id) WHERE root_id IS NOT NULL;
	ALTER TABLE events RENAME TO event_rows;
	CREATE VIEW events AS SELECT id, run_id, ` + sqlstore.EventTypeName + ` AS type, data, at FROM event_rows;
	CREATE TRIGGER events_insert INSTEAD OF INSERT ON events BEGIN
		INSERT INTO event_rows(run_id, type, data, at) VALUES (NEW.run_id, NEW.type, NEW.data, NEW.at);
	END;`,

	// Idempotency keys: the request that created a run or made a
	// decision, recorded with it, so that a client unsure of the outcome
	// asks again and is told.
	sqlstore.RequestsMigration("TEXT"),
	// What fails in a worker that still works (its wait for work), as of
	// its last heartbeat: agentctl status says it is degraded.
	`ALTER TABLE workers ADD COLUMN problems TEXT NOT NULL DEFAULT '';`,
	// Escalation: the steps of a waiting call's ladder that happened,
	// each once.
	sqlstore.EscalationsMigration("TEXT", "INTEGER"),
	// The tamper-evident audit chain and its signed heads.
	sqlstore.ChainMigration("TEXT", "INTEGER"),
}

// resultObjectMigration flags the stored results that have the shape of
// an exec result ({exitCode, stdout, stderr[, error]}) or an http result
// ({status[, headers], body}), with no other keys, as objects, and
// stores the tool-result events that carry them as text with the object
// in place of the text.
var resultObjectMigration = strings.NewReplacer("SHAPE(result)", resultShape("result"), "SHAPE(inner)",
	resultShape("json_extract(data, '$.result')")).Replace(`ALTER TABLE calls ADD COLUMN result_object INTEGER NOT NULL DEFAULT 0;
	UPDATE calls SET result_object = 1 WHERE SHAPE(result);
	UPDATE events SET data = json_set(data, '$.result', json(json_extract(data, '$.result')))
		WHERE type = 'tool-result' AND CASE WHEN NOT json_valid(data) THEN 0 WHEN json_type(data, '$.result') = 'text'
			THEN SHAPE(inner) ELSE 0 END;`)

// resultShape is the SQL condition that the JSON text x is an exec or an
// http result; it holds nothing for text that is not JSON.
func resultShape(x string) string {
	return strings.ReplaceAll(`CASE WHEN NOT json_valid({x}) THEN 0 WHEN json_type({x}) = 'object' THEN
		(json_type({x}, '$.exitCode') = 'integer' AND json_type({x}, '$.stdout') = 'text' AND json_type({x}, '$.stderr') = 'text'
			AND NOT EXISTS (SELECT 1 FROM json_each({x}) WHERE key NOT IN ('exitCode', 'stdout', 'stderr', 'error')))
		OR (json_type({x}, '$.status') = 'integer' AND json_type({x}, '$.body') IS NOT NULL
			AND NOT EXISTS (SELECT 1 FROM json_each({x}) WHERE key NOT IN ('status', 'headers', 'body')))
		ELSE 0 END`, "{x}", x)
}

// migrate brings the schema up to date in one transaction, and returns
// the version it found under the lock.
func migrate(ctx context.Context, db *sql.DB) (int, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	// Another process may have migrated while we waited for the lock.
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, err
	}
	from := v
	for ; v < len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return 0, fmt.Errorf("migrate to schema %d: %w", v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
		return 0, err
	}
	return from, tx.Commit()
}
