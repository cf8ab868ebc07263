// Package postgres is the shared Store for teams: PostgreSQL through
// pgx, so that approvers and runners on different machines work on the
// same runs. Transitions are the same conditional updates as on SQLite;
// each transaction that reads a run's calls before changing the run
// locks the run's row first, so they serialise per run, and workers wake
// on LISTEN/NOTIFY.
package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlstore"
)

// DB is a Store in a PostgreSQL database.
type DB = sqlstore.DB

// Options configure Open. The zero value is ready to use.
type Options struct {
	// Now is the clock; default time.Now.
	Now func() time.Time
	// ReadOnly opens without migrating (agentctl doctor).
	ReadOnly bool
	// CommitWait is how long a COMMIT whose answer was lost is asked
	// after (pg_xact_status) before it is reported unknown; default 10s.
	CommitWait time.Duration
}

// Channels NOTIFY uses: work for workers (payload: a run id), events for
// followers (payload: a run id).
const (
	ChannelWork   = "agentctl_work"
	ChannelEvents = "agentctl_events"
)

// Open connects to the database at dsn and brings its schema up to date.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	name := Redact(dsn)
	if err := Check(dsn); err != nil {
		return nil, err
	}
	conn, err := newTextConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", name, Scrub(classify(err), dsn))
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	version, from, err := schema(ctx, db, opts.ReadOnly)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", name, Scrub(classify(err), dsn))
	}
	d := sqlstore.Dialect{
		Name:          "postgres",
		Dollar:        true,
		LockRun:       true,
		SkipLocked:    true,
		WriteCTE:      true,
		XID:           true,
		Classify:      classify,
		CommitUnknown: commitUnknown,
		TxID:          `pg_current_xact_id()::text`,
		TxStatus:      `SELECT pg_xact_status(CAST(? AS xid8))`,
		CommitWait:    cmp.Or(opts.CommitWait, 10*time.Second),
		IdleConns:     8,
		// One appender of the audit chain at a time, per database.
		ChainLock: `SELECT pg_advisory_xact_lock(7226136)`,
	}
	return sqlstore.New(db, d, sqlstore.Opened{Path: name, Version: version, Known: len(migrations), From: from, Now: opts.Now}), nil
}

// schema reads the schema version, migrating (under an advisory lock, so
// that racing processes migrate once) unless readOnly; from is the
// version found under the lock.
func schema(ctx context.Context, db *sql.DB, readOnly bool) (version, from int, err error) {
	if readOnly {
		v, err := readSchema(ctx, db)
		return v, v, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, err
	}
	defer tx.Rollback()
	// The lock first: two sessions creating the table at once would race
	// in PostgreSQL's catalog (type "agentctl_schema" already exists).
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7226135)`); err != nil {
		return 0, 0, err
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS agentctl_schema (version INTEGER NOT NULL)`); err != nil {
		return 0, 0, err
	}
	var v int
	err = tx.QueryRowContext(ctx, `SELECT version FROM agentctl_schema`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = tx.ExecContext(ctx, `INSERT INTO agentctl_schema(version) VALUES (0)`)
	}
	if err != nil {
		return 0, 0, err
	}
	switch {
	case v > len(migrations):
		return 0, 0, fmt.Errorf("%w: version %d, this agentctl knows up to %d; upgrade agentctl (the database was left as it was)",
			store.ErrNewerSchema, v, len(migrations))
	case v == len(migrations):
		return v, v, nil
	}
	from = v
	for ; v < len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return 0, 0, fmt.Errorf("migrate to schema %d: %w", v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE agentctl_schema SET version = $1`, v); err != nil {
		return 0, 0, err
	}
	return v, from, tx.Commit()
}

// readSchema reads the schema version and writes nothing: a database
// with no schema table is at version 0.
func readSchema(ctx context.Context, db *sql.DB) (int, error) {
	var v int
	err := db.QueryRowContext(ctx, `SELECT version FROM agentctl_schema`).Scan(&v)
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "42P01", errors.Is(err, sql.ErrNoRows): // undefined_table
		return 0, nil
	case err != nil:
		return 0, err
	case v > len(migrations):
		return 0, fmt.Errorf("%w: version %d, this agentctl knows up to %d; upgrade agentctl (the database was left as it was)",
			store.ErrNewerSchema, v, len(migrations))
	}
	return v, nil
}

// migrations bring the schema from version i to i+1. Never edit one that
// has shipped; append.
var migrations = []string{
	`CREATE TABLE specs (
		hash TEXT COLLATE "C" PRIMARY KEY,
		body BYTEA NOT NULL
	);
	CREATE TABLE runs (
		id            TEXT COLLATE "C" PRIMARY KEY,
		agent         TEXT NOT NULL,
		status        TEXT NOT NULL,
		input         TEXT NOT NULL,
		output        TEXT NOT NULL DEFAULT '',
		error         TEXT NOT NULL DEFAULT '',
		spec_hash     TEXT COLLATE "C" NOT NULL REFERENCES specs(hash),
		step          INTEGER NOT NULL DEFAULT 0,
		state         BYTEA,
		owner         TEXT,
		lease_expires BIGINT,
		created_at    BIGINT NOT NULL,
		updated_at    BIGINT NOT NULL,
		parent_id     TEXT COLLATE "C",
		parent_call   TEXT NOT NULL DEFAULT '',
		root_id       TEXT COLLATE "C",
		path          TEXT NOT NULL DEFAULT '[]',
		model_calls   INTEGER NOT NULL DEFAULT 0,
		tokens_in     INTEGER NOT NULL DEFAULT 0,
		tokens_out    INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX runs_status ON runs(status, id);
	CREATE INDEX runs_agent ON runs(agent, id);
	CREATE INDEX runs_root ON runs(root_id, id);
	CREATE TABLE calls (
		run_id        TEXT COLLATE "C" NOT NULL REFERENCES runs(id),
		call_id       TEXT COLLATE "C" NOT NULL,
		seq           INTEGER NOT NULL,
		step          INTEGER NOT NULL,
		tool          TEXT NOT NULL,
		args          TEXT NOT NULL,
		status        TEXT NOT NULL,
		kind          TEXT NOT NULL DEFAULT '',
		result        TEXT NOT NULL DEFAULT '',
		gate          TEXT NOT NULL DEFAULT '',
		gate_error    TEXT NOT NULL DEFAULT '',
		payload       TEXT,
		resume        TEXT,
		resume_schema TEXT,
		deadline      BIGINT,
		created_at    BIGINT NOT NULL,
		updated_at    BIGINT NOT NULL,
		PRIMARY KEY (run_id, call_id)
	);
	CREATE INDEX calls_deadline ON calls(deadline) WHERE status = 'pending' AND deadline IS NOT NULL;
	CREATE INDEX calls_open ON calls(status) WHERE status IN ('pending', 'interrupted', 'approved');
	CREATE TABLE decisions (
		id          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
		run_id      TEXT COLLATE "C" NOT NULL REFERENCES runs(id),
		call_id     TEXT COLLATE "C" NOT NULL,
		action      TEXT NOT NULL,
		by_name     TEXT NOT NULL,
		os_user     TEXT NOT NULL,
		reason      TEXT NOT NULL DEFAULT '',
		at          BIGINT NOT NULL,
		args_before TEXT,
		args_after  TEXT,
		data        TEXT
	);
	CREATE INDEX decisions_run ON decisions(run_id, call_id);
	CREATE TABLE events (
		id     BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
		run_id TEXT COLLATE "C" NOT NULL REFERENCES runs(id),
		type   TEXT NOT NULL,
		data   TEXT NOT NULL,
		at     BIGINT NOT NULL
	);
	CREATE INDEX events_run ON events(run_id, id);`,

	// Workers: runs decided detached wait for one; workers announce
	// themselves.
	`ALTER TABLE runs ADD COLUMN ready INTEGER NOT NULL DEFAULT 0;
	CREATE INDEX runs_ready ON runs(ready) WHERE ready = 1;
	CREATE INDEX runs_unfinished ON runs(status, updated_at) WHERE status IN ('queued', 'running');
	CREATE TABLE workers (
		id          TEXT PRIMARY KEY,
		host        TEXT NOT NULL,
		pid         INTEGER NOT NULL,
		agent       TEXT NOT NULL DEFAULT '',
		concurrency INTEGER NOT NULL,
		lease_ms    INTEGER NOT NULL,
		started_at  BIGINT NOT NULL,
		seen_at     BIGINT NOT NULL,
		done        INTEGER NOT NULL DEFAULT 0
	);
	-- Notifications are sent by the database itself, when the transaction
	-- that makes work or events commits: no extra round trip.
	CREATE FUNCTION agentctl_notify_work() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		PERFORM pg_notify('agentctl_work', NEW.id);
		RETURN NULL;
	END $$;
	CREATE TRIGGER runs_queued AFTER INSERT ON runs FOR EACH ROW
		WHEN (NEW.status = 'queued') EXECUTE FUNCTION agentctl_notify_work();
	CREATE TRIGGER runs_ready AFTER UPDATE OF ready ON runs FOR EACH ROW
		WHEN (NEW.ready = 1 AND OLD.ready = 0) EXECUTE FUNCTION agentctl_notify_work();
	CREATE FUNCTION agentctl_notify_events() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		PERFORM pg_notify('agentctl_events', e.run_id) FROM (SELECT DISTINCT run_id FROM new_events) e;
		RETURN NULL;
	END $$;
	CREATE TRIGGER events_notify AFTER INSERT ON events REFERENCING NEW TABLE AS new_events
		FOR EACH STATEMENT EXECUTE FUNCTION agentctl_notify_events();`,

	// Approver policy: who started a run; how many approvals a call
	// needs and has.
	`ALTER TABLE runs ADD COLUMN started_by TEXT NOT NULL DEFAULT '';
	ALTER TABLE calls ADD COLUMN needed INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE calls ADD COLUMN approvals INTEGER NOT NULL DEFAULT 0;`,

	// An event's data holds its own fields only; its type and run are
	// columns of their own.
	sqlstore.EventFieldsMigration,

	// Structured results: a call's result may be a JSON object (exec,
	// http), flagged as such; results written before, and the results of
	// tool-result events, that have an exec result's shape ({exitCode,
	// stdout, stderr[, error]}) or an http result's ({status[, headers],
	// body}), with no other keys, become objects.
	`ALTER TABLE calls ADD COLUMN result_object INTEGER NOT NULL DEFAULT 0;
	CREATE FUNCTION agentctl_result_object(t text) RETURNS boolean LANGUAGE plpgsql AS $$
	DECLARE j jsonb;
	BEGIN
		IF t IS NULL OR left(t, 1) <> '{' THEN RETURN false; END IF;
		BEGIN
			j := t::jsonb;
		EXCEPTION WHEN others THEN
			RETURN false;
		END;
		RETURN (jsonb_typeof(j->'exitCode') = 'number' AND jsonb_typeof(j->'stdout') = 'string'
				AND jsonb_typeof(j->'stderr') = 'string'
				AND NOT EXISTS (SELECT 1 FROM jsonb_object_keys(j) k WHERE k NOT IN ('exitCode', 'stdout', 'stderr', 'error')))
			OR (jsonb_typeof(j->'status') = 'number' AND j->'body' IS NOT NULL
				AND NOT EXISTS (SELECT 1 FROM jsonb_object_keys(j) k WHERE k NOT IN ('status', 'headers', 'body')));
	END $$;
	-- The event's data with its result text replaced by the object it
	-- holds, its fields in their order; NULL when it holds none.
	CREATE FUNCTION agentctl_event_result(d text) RETURNS text LANGUAGE plpgsql AS $$
	DECLARE j json; r text;
	BEGIN
		BEGIN
			j := d::json;
		EXCEPTION WHEN others THEN
			RETURN NULL;
		END;
		IF json_typeof(j) <> 'object' OR json_typeof(j->'result') IS DISTINCT FROM 'string' THEN RETURN NULL; END IF;
		r := j->>'result';
		IF NOT agentctl_result_object(r) THEN RETURN NULL; END IF;
		RETURN (SELECT '{' || string_agg(to_json(e.key)::text || ':' || CASE WHEN e.key = 'result' THEN r ELSE e.value::text END, ',' ORDER BY e.n) || '}'
			FROM json_each(j) WITH ORDINALITY AS e(key, value, n));
	END $$;
	UPDATE calls SET result_object = 1 WHERE agentctl_result_object(result);
	UPDATE events SET data = agentctl_event_result(data) WHERE type = 'tool-result' AND agentctl_event_result(data) IS NOT NULL;
	DROP FUNCTION agentctl_event_result(text);
	DROP FUNCTION agentctl_result_object(text);`,

	// The server (agentctl serve): API tokens, stored as SHA-256 hashes;
	// how a decider was identified; the inbox of calls waiting for a
	// human, oldest first, paged from an index; and the event feed in
	// commit order: each event keeps the id of the transaction that wrote
	// it (identity values are handed out in insert order, not commit
	// order). Events written before share the migration's transaction id,
	// below every later one.
	`CREATE TABLE tokens (
		id          TEXT COLLATE "C" PRIMARY KEY,
		user_name   TEXT NOT NULL,
		user_groups TEXT NOT NULL DEFAULT '[]',
		hash        TEXT COLLATE "C" NOT NULL UNIQUE,
		created_at  BIGINT NOT NULL,
		created_by  TEXT NOT NULL,
		expires_at  BIGINT NOT NULL,
		revoked_at  BIGINT
	);
	ALTER TABLE decisions ADD COLUMN via TEXT NOT NULL DEFAULT '';
	CREATE INDEX calls_waiting ON calls(created_at, run_id, seq)
		WHERE status IN ('pending', 'interrupted') AND kind <> 'delegation';
	ALTER TABLE events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
	CREATE INDEX events_feed ON events(xid, id);`,

	// Notifications: the outbox of deliveries turned from the event
	// feed, and where each source's deliverer stands in it.
	sqlstore.NotifyMigration(`TEXT COLLATE "C"`, sqlstore.FeedEndQuery(true, "events")),

	// Signed requests already seen (Slack's interactions): a replay is
	// refused by every server sharing the database.
	sqlstore.ReplayMigration(`TEXT COLLATE "C"`),

	// Timings: when each call started and finished executing; the
	// tombstones agentctl prune --keep-audit leaves.
	sqlstore.TimingsMigration(`TEXT COLLATE "C"`, "BIGINT"),

	// Smaller runs and a quicker list: a root run, which stores no
	// root_id (one copied from an early SQLite database stored its own
	// id: no longer), has no entry in runs_root; the calls waiting in given runs
	// are read through an index of their own, not among every call
	// waiting in the database (calls_open); events move to event_rows,
	// their types stored as one-letter codes, and events is a view of
	// them with every type by name, which an agentctl of schema 9 still
	// running reads, and writes into through a trigger, as it did.
	`DROP INDEX runs_root;
	UPDATE runs SET root_id = NULL WHERE root_id = id;
	CREATE INDEX runs_root ON runs(root_id, id) WHERE root_id IS NOT NULL;
	CREATE INDEX calls_pending ON calls(run_id, seq) WHERE status IN ('pending', 'interrupted');
	ALTER TABLE events RENAME TO event_rows;
	CREATE VIEW events AS SELECT id, run_id, ` + sqlstore.EventTypeName + ` AS type, data, at, xid FROM event_rows;
	CREATE FUNCTION agentctl_events_insert() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO event_rows(run_id, type, data, at) VALUES (NEW.run_id, NEW.type, NEW.data, NEW.at)
			RETURNING id, xid INTO NEW.id, NEW.xid;
		RETURN NEW;
	END $$;
	CREATE TRIGGER events_insert INSTEAD OF INSERT ON events FOR EACH ROW EXECUTE FUNCTION agentctl_events_insert();`,

	// Idempotency keys: the request that created a run or made a
	// decision, recorded with it, so that a client unsure of the outcome
	// asks again and is told.
	sqlstore.RequestsMigration(`TEXT COLLATE "C"`),

	// Credentials apart: token hashes and browser sessions move to a
	// schema of their own, which a role granted SELECT on the tables of
	// public (an auditor) cannot read. Connections find them on their
	// search_path.
	`CREATE SCHEMA IF NOT EXISTS ` + PrivateSchema + `;
	REVOKE ALL ON SCHEMA ` + PrivateSchema + ` FROM PUBLIC;
	ALTER TABLE tokens SET SCHEMA ` + PrivateSchema + `;
	ALTER TABLE sessions SET SCHEMA ` + PrivateSchema + `;`,
	// What fails in a worker that still works (its wait for work), as of
	// its last heartbeat: agentctl status says it is degraded.
	`ALTER TABLE workers ADD COLUMN problems TEXT NOT NULL DEFAULT '';`,
	// Escalation: the steps of a waiting call's ladder that happened,
	// each once.
	sqlstore.EscalationsMigration(`TEXT COLLATE "C"`, "BIGINT"),
	// The tamper-evident audit chain and its signed heads.
	sqlstore.ChainMigration(`TEXT COLLATE "C"`, "BIGINT"),
}
