package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/backend"
	"github.com/agentctl/agentctl/engine/store/sqlite"
	"github.com/agentctl/agentctl/engine/store/sqlstore"
)

const migrateHelp = `Without --from and --to, bring the schema of the --db database up to
date: any command that writes does so when it opens a database, while
commands that only read (list, show, events, status, doctor) never change
it and ask for an upgrade instead.

With them, copy every run, call, decision, event, spec snapshot and API
token from a SQLite database to a PostgreSQL one (the target's schema is
created or brought up to date first), in one transaction, keeping run and
call ids and the order of decisions and events, then verify that the
target holds every row of the source, the same. The target may hold runs
of its own.

The source is written only if its schema is older and this user owns it
and may write it and its directory: it is then upgraded in place, as any
command that writes would. Any other source (another user's backup, a
read-only mount) is left as it is: a copy of it is taken into TMPDIR,
which needs room for the whole database, upgraded there if need be, read,
and removed. A source that is not there, or is not an agentctl database,
is an error, and nothing is created.

Rows are matched by what they are: a run by its id, a call by its run and
id, a decision or event by its run and its place among the run's, a
token by its id (a revocation on either side is kept). So
migrate is safe to run again: after more work in the SQLite file, runs
and calls the target holds in an earlier state are brought up to date and
new decisions and events added; a run the target has taken further (it
was advanced there since it was copied) is left as it is there. A run
changed in both (decided or advanced in each since it was copied) is a
conflict: migrate copies nothing, names the runs and exits 4. Stop the processes
using the SQLite file first, or what they do later is not copied; a copy
of another user's file that its owner wrote meanwhile is taken again, up
to three times, and then migrate stops, having copied nothing.

Examples:
  agentctl migrate --db ops.db
  agentctl migrate --from ~/.local/state/agentctl/agentctl.db --to postgres://agentctl@db/agentctl
  agentctl migrate --from ops.db --to "$AGENTCTL_PG" -o json`

func (a *app) migrateCmd() *cobra.Command {
	var from, to string
	var out format
	cmd := &cobra.Command{
		Use:   "migrate [--from PATH.db --to postgres://...]",
		Short: "Upgrade a database's schema, or copy a SQLite database into PostgreSQL",
		Long:  migrateHelp,
		Args:  argsCheck(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			switch {
			case from == "" && to == "":
				return a.upgrade(ctx, out)
			case from == "" || to == "":
				return usageErr(errors.New("migrate needs --from PATH.db and --to postgres://..."))
			case backend.IsPostgres(from):
				return usageErr(errors.New("--from: a SQLite file, not a PostgreSQL database"))
			case !backend.IsPostgres(to):
				return usageErr(fmt.Errorf("--to %q: want a postgres:// URL or PostgreSQL key=value settings", backend.Redact(to)))
			}
			gcForLongRunning() // a copy holds the source's rows
			if _, err := os.Stat(from); errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("migrate: %w", &store.NotFoundError{What: "--from: no database at " + from})
			}
			dst, err := openDB(ctx, to, backend.Options{})
			if err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
			defer dst.Close()
			src, done, err := a.source(ctx, from)
			if err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
			defer done()
			copied, err := sqlstore.Copy(ctx, src, dst)
			var moved *sqlstore.MovedError
			switch {
			case errors.As(err, &moved):
				return fmt.Errorf("migrate %s to %s: nothing was copied: %w; advance each run in one database only: "+
					"go on with these runs where they are, or migrate into a database that does not have them", from, dst.Path(), err)
			case err != nil:
				return fmt.Errorf("migrate %s to %s: nothing was copied: %w", from, dst.Path(), err)
			case out == "json":
				return writeJSON(a.stdout, copied)
			}
			ahead := 0
			for _, c := range copied {
				ahead += c.Ahead
				fmt.Fprintf(a.stdout, "%-9s  %6d in the source  %6d copied  %6d updated  %6d already there  %6d in the target\n",
					c.Table, c.Source, c.Copied, c.Updated, c.Present, c.Target)
			}
			if n := ahead; n > 0 {
				fmt.Fprintf(a.stdout, "%d %s further along in the target (advanced there since copied): left as %s\n",
					n, plural(n, "run is", "runs are"), plural(n, "it is", "they are"))
			}
			fmt.Fprintf(a.stdout, "verified: %s holds every run, call, decision and event of %s, the same\n", dst.Path(), from)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the SQLite database `PATH` to copy")
	cmd.Flags().StringVar(&to, "to", "", "the PostgreSQL database `URL` to copy into")
	addFormatFlag(cmd, &out)
	return cmd
}

// upgrade brings the schema of the --db database up to date, as any
// command that writes does on open, and says so.
func (a *app) upgrade(ctx context.Context, out format) error {
	db, err := a.store(ctx)
	if err != nil {
		return err
	}
	// What this process found under the migration's lock: of two racing
	// to upgrade, only the one that did says so.
	now, _ := db.Schema()
	from := db.UpgradedFrom()
	if out == "json" {
		return writeJSON(a.stdout, map[string]any{"database": db.Path(), "schema": now, "from": from})
	}
	if from != now {
		fmt.Fprintf(a.stdout, "database %s: schema %d, upgraded from %d\n", db.Path(), now, from)
		return nil
	}
	fmt.Fprintf(a.stdout, "database %s: schema %d, up to date\n", db.Path(), now)
	return nil
}

// source opens the SQLite database migrate copies from (migrate has
// checked that it exists, before the target is opened), and returns what
// closes it. One that holds no agentctl schema is an error: nothing is
// written. One this process may
// upgrade in place (sqlite.Writable) is opened to write, as by any
// command that writes: upgraded if its schema is older. Any other
// (another user's, a read-only file or mount) is left as it is: a
// snapshot of it (snapshot) is read instead.
func (a *app) source(ctx context.Context, path string) (*sqlstore.DB, func(), error) {
	if !sqlite.Writable(path) {
		return a.snapshot(ctx, path)
	}
	db, err := openDB(ctx, path, backend.Options{Inspect: true})
	if err != nil {
		return nil, nil, err
	}
	found, _ := db.Schema()
	db.Close()
	if found == 0 {
		return nil, nil, notAgentctl(path)
	}
	if db, err = openDB(ctx, path, backend.Options{}); err != nil {
		return nil, nil, err
	}
	return db, func() { db.Close() }, nil
}

// notAgentctl is the error of a source that holds no agentctl schema.
func notAgentctl(path string) error {
	return &store.NotFoundError{What: "no agentctl database in " + path + " (it has no agentctl schema): nothing to copy; check --from"}
}

// snapshotTries is how many times snapshot copies a database that
// another process writes meanwhile before it gives up.
const snapshotTries = 3

// snapshot copies the database at path, which this process may not
// write, into a private temporary directory under TMPDIR, taken whole
// from a read-only connection (sqlite.Snapshot), again if another
// process wrote it meanwhile; upgrades the copy's schema if older; and
// returns it open, with what closes and removes it.
func (a *app) snapshot(ctx context.Context, path string) (*sqlstore.DB, func(), error) {
	dir, err := os.MkdirTemp("", "agentctl-migrate-")
	if err != nil {
		return nil, nil, fmt.Errorf("copy %s: %w (TMPDIR names where the copy goes)", path, err)
	}
	fail := func(err error) (*sqlstore.DB, func(), error) {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	busy, err := busyTimeout()
	if err != nil {
		return fail(err)
	}
	cp := filepath.Join(dir, "source.db")
	for try := 1; ; try++ {
		err = sqlite.Snapshot(ctx, path, cp, sqlite.Options{BusyTimeout: busy})
		if !errors.Is(err, sqlite.ErrChanged) || try == snapshotTries {
			break
		}
	}
	switch {
	case errors.Is(err, sqlite.ErrChanged):
		return fail(fmt.Errorf("copy %s: %w: %w, %d times: another process is writing it; stop the processes using it, or migrate as its owner, and run migrate again",
			path, store.ErrBusy, err, snapshotTries))
	case errors.Is(err, store.ErrCannotWrite):
		return fail(fmt.Errorf("%w (TMPDIR names where the copy goes: it needs room for the whole database)", err))
	case err != nil:
		return fail(err)
	}
	db, err := openDB(ctx, cp, backend.Options{Inspect: true})
	if err != nil {
		return fail(err)
	}
	found, known := db.Schema()
	db.Close()
	if found == 0 {
		return fail(notAgentctl(path))
	}
	up, err := openDB(ctx, cp, backend.Options{})
	if err != nil {
		return fail(fmt.Errorf("upgrade the copy of %s in %s: %w (TMPDIR names where the copy goes: it needs room for the whole database)", path, dir, err))
	}
	if found < known {
		fmt.Fprintf(a.stderr, "agentctl: %s is at schema %d of %d and this user may not upgrade it in place: "+
			"copying from an upgraded copy of it; the file is left as it was\n", path, found, known)
	}
	return up, func() { up.Close(); os.RemoveAll(dir) }, nil
}
