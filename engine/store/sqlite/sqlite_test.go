package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlstore"
	"github.com/agentctl/agentctl/engine/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) func() store.Store {
		path := filepath.Join(t.TempDir(), "agentctl.db")
		return func() store.Store {
			db, err := Open(context.Background(), path, Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return db
		}
	})
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(ctx, path, Options{})
	if !errors.Is(err, store.ErrNewerSchema) {
		t.Fatalf("opening a newer schema: %v, want ErrNewerSchema", err)
	}
}

func TestReopenKeepsRuns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "dir", "a.db") // directories are created
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &store.Run{ID: "01A", Agent: "a", Status: store.Running, SpecHash: "h", State: []byte("{}")}
	if err := db.CreateRun(ctx, r, []byte("s"), store.Lease{Owner: "p", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Run(ctx, "01A"); err != nil {
		t.Fatal(err)
	}
}

func TestOldEvents(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	storetest.OldEvents(t, func(rows [][2]string) {
		db := oldRun(t, path)
		defer db.Close()
		for _, row := range rows {
			if _, err := db.SQL().Exec(`INSERT INTO events(run_id, type, data, at) VALUES ('01OLD', ?, ?, 0)`, row[0], row[1]); err != nil {
				t.Fatal(err)
			}
		}
		rewind(t, db, eventFields)
	}, func() store.Store {
		db, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}

// The schema versions before the migrations the tests of old rows replay.
const (
	eventFields    = 6  // sqlstore.EventFieldsMigration
	resultObjects  = 7  // resultObjectMigration
	serverSchema   = 8  // tokens, decisions.via, the inbox index
	notifySchema   = 9  // notifications, their cursors, sessions
	replaySchema   = 10 // signed requests already seen
	timingsSchema  = 11 // call times, tombstones
	codesSchema    = 12 // runs_root without roots, event type codes
	requestsTable  = 13 // idempotency keys
	workerProblems = 14 // workers.problems
	escalations    = 15 // the escalation steps that happened
	auditChain     = 16 // the audit chain and its checkpoints
)

// rewind undoes the migrations after version v, leaving the rows, and
// marks the schema at v, so that opening the database migrates it again.
func rewind(t *testing.T, db *DB, v int) {
	t.Helper()
	undo := map[int]string{
		resultObjects: `ALTER TABLE calls DROP COLUMN result_object`,
		serverSchema:  `DROP TABLE tokens; DROP INDEX calls_waiting; ALTER TABLE decisions DROP COLUMN via`,
		notifySchema:  `DROP TABLE notifications; DROP TABLE notify_cursors; DROP TABLE sessions`,
		replaySchema:  `DROP TABLE replays`,
		timingsSchema: `DROP INDEX runs_ended; DROP TABLE tombstones; ALTER TABLE calls DROP COLUMN finished_at; ALTER TABLE calls DROP COLUMN started_at`,
		codesSchema: `DROP VIEW events; ALTER TABLE event_rows RENAME TO events;
			DROP INDEX runs_root; CREATE INDEX runs_root ON runs(root_id, id)`,
		requestsTable:  `DROP TABLE requests`,
		workerProblems: `ALTER TABLE workers DROP COLUMN problems`,
		escalations:    `DROP TABLE escalations`,
		auditChain:     `DROP TABLE audit_chain; DROP TABLE audit_checkpoints`,
	}
	for i := len(migrations) - 1; i >= v; i-- {
		if _, err := db.SQL().Exec(undo[i]); undo[i] != "" && err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.SQL().Exec(fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
		t.Fatal(err)
	}
}

func TestOldResults(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	storetest.OldResults(t, func(results, events []string) {
		db := oldRun(t, path)
		defer db.Close()
		for i, res := range results {
			if _, err := db.SQL().Exec(`INSERT INTO calls(run_id, call_id, seq, step, tool, args, status, result, created_at, updated_at)
				VALUES ('01OLD', ?, ?, 1, 't', '{}', 'succeeded', ?, 0, 0)`, fmt.Sprintf("call_%d", i+1), i+1, res); err != nil {
				t.Fatal(err)
			}
		}
		for _, data := range events {
			if _, err := db.SQL().Exec(`INSERT INTO events(run_id, type, data, at) VALUES ('01OLD', 'tool-result', ?, 0)`, data); err != nil {
				t.Fatal(err)
			}
		}
		rewind(t, db, resultObjects)
	}, func() store.Store {
		db, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}

// oldRun opens the database and creates the completed run 01OLD, under
// which the tests of old rows insert them.
func oldRun(t *testing.T, path string) *sqlstore.DB {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &store.Run{ID: "01OLD", Agent: "a", Status: store.Completed, SpecHash: "h", State: []byte("{}")}
	if err := db.CreateRun(ctx, r, []byte("s"), store.Lease{}); err != nil {
		db.Close()
		t.Fatal(err)
	}
	return db
}

// An agentctl of schema 12 still running reads and writes events as it
// did, by name, through the view events.
func TestOldProcess(t *testing.T) {
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "a.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	storetest.OldProcess(t, db, db.SQL(), storetest.OldSQL{
		Events: `SELECT id, type FROM events WHERE run_id = ? AND id > ? ORDER BY id`,
		Append: `INSERT INTO events(run_id, type, data, at) VALUES (?1, ?2, '{}', 0), (?1, ?3, '{}', 0)`,
		Delete: `DELETE FROM events WHERE run_id IN (?)`,
	})
}

// Of processes racing to open a database at an older schema, one
// migrates it and says so; the others find it done.
func TestRacingUpgrade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	db := oldRun(t, path)
	rewind(t, db, timingsSchema)
	db.Close()
	storetest.RacingUpgrade(t, timingsSchema, func() (storetest.Upgrader, error) {
		return Open(context.Background(), path, Options{})
	})
}

// A new database is its user's alone, mode 0600, and so are its -wal
// and -shm, whatever the umask lets through.
func TestNewFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want -rw-------", filepath.Base(name), fi.Mode().Perm())
		}
	}
}
