// Package backend opens the store a data source names: a postgres:// URL
// or libpq key=value settings (package postgres), or a SQLite file
// (package sqlite). It is the one place that picks a backend, and it
// refuses a string that looks like a URL of another scheme, or like
// settings PostgreSQL does not know, rather than make a file of it.
package backend

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/postgres"
	"github.com/agentctl/agentctl/engine/store/sqlite"
	"github.com/agentctl/agentctl/engine/store/sqlstore"
	"github.com/agentctl/agentctl/internal/wait"
)

// Channels a Wakeup listens on.
const (
	ChannelWork   = postgres.ChannelWork   // a run became work for a worker
	ChannelEvents = postgres.ChannelEvents // a run has new events
)

// Options configure Open. The zero value opens for writing, migrating the
// schema as needed.
type Options struct {
	// ReadOnly opens for a command that only reads: nothing is created
	// or migrated. A SQLite file that does not exist yet, and a database
	// with no agentctl schema, read as empty; a schema older than this
	// build's fails with store.ErrOldSchema.
	ReadOnly bool
	// Inspect opens read-only as found, whatever its schema (doctor); a
	// SQLite file that does not exist is a *store.NotFoundError.
	Inspect bool
	// BusyTimeout is how long a SQLite write waits for another
	// process's transaction; 0: the default.
	BusyTimeout time.Duration
}

// ErrBadDSN reports a database string that names no database agentctl
// can open; nothing was created.
var ErrBadDSN = postgres.ErrBadDSN

// IsPostgres reports whether dsn names a PostgreSQL database: a
// postgres:// or postgresql:// URL, or key=value settings.
func IsPostgres(dsn string) bool { return postgres.IsDSN(dsn) }

// Check says whether dsn is a database string agentctl accepts (a SQLite
// file path, a postgres:// URL, PostgreSQL key=value settings); an
// error matches ErrBadDSN and shows dsn with its passwords masked.
func Check(dsn string) error { return postgres.Check(dsn) }

// Redact returns dsn with its passwords masked, for messages and logs.
func Redact(dsn string) string { return postgres.Redact(dsn) }

// Open opens the store dsn names.
func Open(ctx context.Context, dsn string, opts Options) (*sqlstore.DB, error) {
	if err := Check(dsn); err != nil {
		return nil, err
	}
	if opts.Inspect {
		if _, err := os.Stat(dsn); !IsPostgres(dsn) && errors.Is(err, fs.ErrNotExist) {
			return nil, &store.NotFoundError{What: "no database at " + dsn}
		}
		return open(ctx, dsn, opts)
	}
	if !opts.ReadOnly {
		return open(ctx, dsn, opts)
	}
	if !IsPostgres(dsn) {
		if _, err := os.Stat(dsn); errors.Is(err, fs.ErrNotExist) {
			return empty(ctx)
		}
	}
	db, err := open(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	found, known := db.Schema()
	switch {
	case found == 0: // created, never migrated: its creator died first
		db.Close()
		return empty(ctx)
	case found < known:
		db.Close()
		return nil, fmt.Errorf("open database %s: %w (schema %d of %d)", db.Path(), store.ErrOldSchema, found, known)
	}
	return db, nil
}

func open(ctx context.Context, dsn string, opts Options) (*sqlstore.DB, error) {
	readOnly := opts.ReadOnly || opts.Inspect
	if IsPostgres(dsn) {
		return postgres.Open(ctx, dsn, postgres.Options{ReadOnly: readOnly})
	}
	return sqlite.Open(ctx, dsn, sqlite.Options{BusyTimeout: opts.BusyTimeout, ReadOnly: readOnly})
}

// empty is a store that holds no runs: an empty database in memory.
func empty(ctx context.Context) (*sqlstore.DB, error) {
	return sqlite.Open(ctx, sqlite.Memory, sqlite.Options{})
}

// Wakeup blocks until a notification on its channel may have arrived or d
// passes.
type Wakeup func(ctx context.Context, d time.Duration) error

// Wakeups returns a Wakeup for dsn's channel (PostgreSQL's LISTEN; on
// SQLite it waits d) and a function that stops listening.
func Wakeups(ctx context.Context, dsn, channel string) (Wakeup, func(), error) {
	if !IsPostgres(dsn) {
		return func(ctx context.Context, d time.Duration) error {
			return wait.For(ctx, d)
		}, func() {}, nil
	}
	l, err := postgres.Listen(ctx, dsn, channel)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, d time.Duration) error { _, err := l.Wait(ctx, d); return err }, func() { l.Close() }, nil
}
