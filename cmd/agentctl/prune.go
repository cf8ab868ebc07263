package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine/store"
)

const pruneHelp = `Prune deletes the runs that ended (completed or failed) before a cutoff,
with their calls, events, decisions and notifications, and the spec
snapshots no run uses any more: retention for a database that grows with
every run.

A tree (a root run and its sub-agents' child runs) is pruned whole or not
at all, and only once every run of it has ended before the cutoff: a run
that is queued, running, suspended or stalled is never deleted, nor is
any run of its tree. Trees go oldest first, in batches of --batch runs
(default 500), each committed on its own, so that other processes
(approve, workers, agentctl serve) wait at most one batch; on SQLite,
prune pauses between batches to let them write. Interrupted, it leaves
the batches it committed pruned and the rest as they were.

--completed-before takes a duration back from now (30d, 12h) or a time
(RFC 3339, or a date: 2026-11-01); it is required. --dry-run counts what
would be deleted and changes nothing: it only reads.

--keep-audit keeps a tombstone of each pruned run (its id, root, agent,
status, times and who started it) with its decisions: agentctl audit goes
on listing them. Without it, the pruned runs' decisions leave the audit
trail with them.

--vacuum then reclaims the space. On SQLite it rewrites the file: that
blocks every writer until it is done, and needs free disk space as large
as the database, so run it at a quiet time. On PostgreSQL it runs VACUUM
(ANALYZE) on agentctl's tables, which blocks no one: the space becomes
reusable by the database (autovacuum would get there too), not returned
to the operating system.

agentctl serve prunes on a schedule when its configuration says so:
prune: {completedBefore: 30d, every: 24h, keepAudit: true}.`

// pruneResult is what prune -o json prints.
type pruneResult struct {
	DryRun        bool      `json:"dryRun"`
	Before        time.Time `json:"before"`
	Runs          int       `json:"runs"`
	Calls         int       `json:"calls"`
	Events        int       `json:"events"`
	Decisions     int       `json:"decisions"`
	Notifications int       `json:"notifications"`
	Specs         int       `json:"specs"`
	Tombstones    int       `json:"tombstones"`
	Batches       int       `json:"batches"`
	// Kept is the root of an ended tree kept all the same (it holds the
	// newest event, on SQLite).
	Kept   string    `json:"kept,omitempty"`
	Vacuum *vacuumed `json:"vacuum,omitempty"`
}

// vacuumed is the database's size before and after --vacuum, in bytes.
type vacuumed struct {
	SizeBefore int64 `json:"sizeBefore"`
	SizeAfter  int64 `json:"sizeAfter"`
}

type pruneFlags struct {
	before                  string
	dryRun, keepAudit, vacu bool
	batch                   int
	out                     format
}

func (a *app) pruneCmd() *cobra.Command {
	var f pruneFlags
	cmd := &cobra.Command{
		Use:   "prune --completed-before AGE|TIME [--dry-run] [--keep-audit] [--vacuum]",
		Short: "Delete the runs that ended before a cutoff (retention)",
		Long:  pruneHelp,
		Example: `  agentctl prune --completed-before 30d --dry-run
  agentctl prune --completed-before 90d --keep-audit
  agentctl prune --completed-before 2026-01-01 --keep-audit --vacuum
  0 3 * * * agentctl prune --completed-before 30d --keep-audit -o json >> /var/log/agentctl-prune.log`,
		Args: argsCheck(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			gcForLongRunning() // batch after batch, as long as history is
			return a.prune(cmd, f)
		},
	}
	cmd.Flags().StringVar(&f.before, "completed-before", "", "prune the trees that ended before `AGE|TIME`: a duration back from now (30d) or a time (RFC 3339, a date); required")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "count what would be deleted, and change nothing")
	cmd.Flags().BoolVar(&f.keepAudit, "keep-audit", false, "keep a tombstone of each pruned run, with its decisions, for agentctl audit")
	cmd.Flags().BoolVar(&f.vacu, "vacuum", false, "then reclaim the space (SQLite: rewrites the file, blocking every writer until done)")
	cmd.Flags().IntVar(&f.batch, "batch", store.DefaultPruneBatch, "the most runs deleted in one transaction (a larger tree goes alone, whole)")
	addFormatFlag(cmd, &f.out)
	return cmd
}

func (a *app) prune(cmd *cobra.Command, f pruneFlags) error {
	ctx := cmd.Context()
	if f.before == "" {
		return cmdUsageErr(cmd, errors.New("prune needs --completed-before AGE|TIME, such as --completed-before 30d (add --dry-run to see what it would delete)"))
	}
	now := time.Now()
	before, err := pointInTime("--completed-before", f.before, now)
	if err != nil {
		return err
	}
	switch {
	case before.After(now):
		return cmdUsageErr(cmd, fmt.Errorf("--completed-before %q is in the future (%s): it would prune every ended run; give an age (30d) or a past time", f.before, stamp(before)))
	case f.vacu && f.dryRun:
		return cmdUsageErr(cmd, errors.New("--vacuum and --dry-run exclude each other: a dry run changes nothing"))
	case f.batch < 1:
		return cmdUsageErr(cmd, fmt.Errorf("--batch %d: want 1 or more", f.batch))
	}
	a.dbOpts.ReadOnly = f.dryRun // a dry run only reads
	db, err := a.store(ctx)
	if err != nil {
		return err
	}
	var p store.Pruner = db
	c, err := p.Prune(ctx, store.PruneOptions{Before: before, DryRun: f.dryRun, KeepAudit: f.keepAudit, Batch: f.batch})
	res := pruneResult{DryRun: f.dryRun, Before: before.UTC(), Runs: c.Runs, Calls: c.Calls, Events: c.Events, Decisions: c.Decisions,
		Notifications: c.Notifications, Specs: c.Specs, Tombstones: c.Tombstones, Batches: c.Batches, Kept: c.Kept}
	if err != nil {
		if c.Runs > 0 {
			fmt.Fprintf(a.stderr, "agentctl: %s before the error; they stay pruned\n", pruneLine(res))
		}
		return err
	}
	if f.vacu {
		if res.Vacuum, err = a.vacuum(cmd, p, f.out); err != nil {
			return err
		}
	}
	if f.out == "json" {
		return writeJSON(a.stdout, res)
	}
	fmt.Fprintln(a.stdout, pruneLine(res))
	if res.Vacuum != nil {
		a.printVacuum(db.Dialect(), res.Vacuum)
	}
	return nil
}

// vacuum runs --vacuum, saying first, on a terminal's stderr, that
// SQLite's blocks writers.
func (a *app) vacuum(cmd *cobra.Command, p store.Pruner, out format) (*vacuumed, error) {
	if a.db.Dialect() == "sqlite" && out != "json" {
		fmt.Fprintln(a.stderr, "vacuuming: other processes cannot write the database until it is done")
	}
	before, after, err := p.Vacuum(cmd.Context())
	if err != nil {
		return nil, err
	}
	return &vacuumed{SizeBefore: before, SizeAfter: after}, nil
}

func (a *app) printVacuum(dialect string, v *vacuumed) {
	if dialect == "postgres" {
		fmt.Fprintf(a.stdout, "vacuumed the tables (VACUUM ANALYZE; the database is %s): their free space is reusable by PostgreSQL, not returned to the operating system\n",
			bytesText(v.SizeAfter))
		return
	}
	fmt.Fprintf(a.stdout, "vacuumed the database: %s before, %s after\n", bytesText(v.SizeBefore), bytesText(v.SizeAfter))
}

// pruneLine says what a prune deleted, or would delete.
func pruneLine(r pruneResult) string {
	verb, keep := "pruned", "kept"
	if r.DryRun {
		verb, keep = "would prune", "would keep"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (%s, %s, %s) that ended before %s", verb, count(r.Runs, "run", "runs"),
		count(r.Calls, "call", "calls"), count(r.Events, "event", "events"), count(r.Decisions, "decision", "decisions"), stamp(r.Before))
	var also []string
	if r.Notifications > 0 {
		also = append(also, count(r.Notifications, "notification", "notifications"))
	}
	if r.Specs > 0 {
		also = append(also, count(r.Specs, "spec snapshot", "spec snapshots")+" no run uses")
	}
	if len(also) > 0 {
		fmt.Fprintf(&b, ", with %s", strings.Join(also, " and "))
	}
	if r.Tombstones > 0 {
		fmt.Fprintf(&b, "; %s %s for agentctl audit", keep, count(r.Tombstones, "tombstone", "tombstones"))
	}
	if r.Kept != "" {
		fmt.Fprintf(&b, "\n%s run %s (and its tree) although it ended before the cutoff: it holds the newest event, and goes once a newer one is written", keep, r.Kept)
	}
	return b.String()
}

func count(n int, one, many string) string { return fmt.Sprintf("%d %s", n, plural(n, one, many)) }

// bytesText writes a size in bytes, KiB, MiB or GiB.
func bytesText(n int64) string {
	const k = 1024
	switch {
	case n >= k*k*k:
		return fmt.Sprintf("%.1f GiB", float64(n)/(k*k*k))
	case n >= k*k:
		return fmt.Sprintf("%.1f MiB", float64(n)/(k*k))
	case n >= k:
		return fmt.Sprintf("%.1f KiB", float64(n)/k)
	}
	return fmt.Sprintf("%d bytes", n)
}
