package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agentctl/agentctl/engine/store"
)

// Finding is one result of Doctor.
type Finding struct {
	Check  string   `json:"check"`
	Status string   `json:"status"` // ok, warn (needs a human) or error (damage)
	Detail string   `json:"detail"`
	Runs   []string `json:"runs,omitempty"` // the runs concerned, at most 20
	// Fix is what to do about it, as the front end that shows the
	// report phrases it; the store leaves it empty.
	Fix string `json:"fix,omitempty"`
}

// Finding statuses.
const (
	FindingOK    = "ok"
	FindingWarn  = "warn"
	FindingError = "error"
)

// Report is what Doctor found.
type Report struct {
	Path     string         `json:"path"`
	Backend  string         `json:"backend"`
	Bytes    int64          `json:"bytes"`
	Schema   int            `json:"schema"`
	Known    int            `json:"knownSchema"`
	Journal  string         `json:"journal"`
	Runs     map[string]int `json:"runs"` // by status
	Findings []Finding      `json:"findings"`
}

// OK reports whether no check found damage.
func (r *Report) OK() bool {
	for _, f := range r.Findings {
		if f.Status == FindingError {
			return false
		}
	}
	return true
}

// checks are consistency rules: a query returning the ids of the runs
// that break the rule, and what it means.
var checks = []struct {
	name, query, detail string
	status              string
}{
	{"run states", `SELECT id FROM runs WHERE status NOT IN ('queued','running','suspended','stalled','completed','failed')`,
		"runs with an unknown status", FindingError},
	{"call states", `SELECT DISTINCT run_id FROM calls WHERE status NOT IN ('pending','approved','declined','executing','succeeded','failed','interrupted')`,
		"runs with calls of an unknown status", FindingError},
	{"ended runs", `SELECT DISTINCT r.id FROM runs r JOIN calls c ON c.run_id = r.id
		WHERE r.status IN ('completed','failed') AND c.status IN ('pending','approved','executing')`,
		"runs that ended with calls still pending, approved or executing", FindingError},
	{"suspended runs", `SELECT r.id FROM runs r WHERE r.status = 'suspended' AND r.ready = 0 AND NOT EXISTS
		(SELECT 1 FROM calls c WHERE c.run_id = r.id AND c.status IN ('pending','interrupted'))`,
		"suspended runs with no call waiting for a human", FindingError},
	{"child runs", `SELECT r.id FROM runs r WHERE r.parent_id IS NOT NULL AND NOT EXISTS
		(SELECT 1 FROM runs p WHERE p.id = r.parent_id)`,
		"child runs whose parent is missing", FindingError},
	{"unapproved calls", `SELECT DISTINCT c.run_id FROM calls c
		WHERE (c.gate LIKE '{"verdict":"required"%' OR c.gate LIKE 'required by %')
		AND c.status IN ('approved','executing','succeeded','failed','interrupted')
		AND NOT EXISTS (SELECT 1 FROM decisions d WHERE d.run_id = c.run_id AND d.call_id = c.call_id AND d.action IN ('approve','resume'))`,
		"calls that need approval marked approved or run with no approval on record (changed outside agentctl? only agentctl serve should write a shared database)", FindingError},
	{"stopped runs", `SELECT id FROM runs WHERE status = 'running' AND (owner IS NULL OR lease_expires < ?)`,
		"runs left running by a process that stopped", FindingWarn},
	{"stalled runs", `SELECT id FROM runs WHERE status = 'stalled'`,
		"runs stalled because their model could not be asked", FindingWarn},
	{"interrupted calls", `SELECT DISTINCT run_id FROM calls WHERE status = 'interrupted'`,
		"runs with a call a crash interrupted", FindingWarn},
	{"overdue approvals", `SELECT DISTINCT run_id FROM calls WHERE status = 'pending' AND deadline IS NOT NULL AND deadline < ?`,
		"runs with calls past their approvalTimeout", FindingWarn},
}

// DoctorOptions configure Doctor.
type DoctorOptions struct {
	// Dead reports whether a lease holder is provably a process that no
	// longer runs: the runs it holds are reported stopped at once, not
	// only once the lease runs out. Nil: only expired leases count.
	Dead func(owner string) bool
}

// Doctor checks the database: the backend's integrity check, the schema
// version, the consistency of runs and calls, and what waits for a
// human. It only reads.
func (s *DB) Doctor(ctx context.Context, opts DoctorOptions) (*Report, error) {
	r := &Report{Path: s.path, Backend: s.d.Name, Schema: s.version, Known: s.known, Runs: map[string]int{}, Journal: "n/a"}
	if fi, err := os.Stat(s.path); err == nil {
		r.Bytes = fi.Size()
	}
	if s.d.Journal != nil {
		r.Journal = s.d.Journal(ctx, s.db)
	}
	if s.d.Integrity != nil {
		problems, err := s.d.Integrity(ctx, s.db)
		if err != nil {
			if err = s.Classify(err); !errors.Is(err, store.ErrCorrupt) {
				return nil, err
			}
			problems = []string{err.Error()}
		}
		if len(problems) == 0 {
			r.Findings = append(r.Findings, Finding{Check: "integrity", Status: FindingOK, Detail: s.d.Name + " integrity check passed"})
		} else {
			r.Findings = append(r.Findings, Finding{Check: "integrity", Status: FindingError,
				Detail: s.d.Name + " integrity check: " + strings.Join(problems, "; ") + "; restore the database from a backup"})
			return r, nil // the rest would read damaged pages
		}
	}
	switch {
	case s.version == 0:
		r.Findings = append(r.Findings, Finding{Check: "schema", Status: FindingOK,
			Detail: "no schema yet: an empty database"})
		return r, nil
	case s.version < s.known:
		r.Findings = append(r.Findings, Finding{Check: "schema", Status: FindingWarn,
			Detail: fmt.Sprintf("schema %d of %d", s.version, s.known)})
		return r, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT status, count(*) FROM runs GROUP BY status`)
	if err != nil {
		return nil, s.Classify(err)
	}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			rows.Close()
			return nil, err
		}
		r.Runs[st] = n
	}
	rows.Close()
	now := ms(s.now())
	for _, c := range checks {
		var ids []string
		var args []any
		if strings.Contains(c.query, "?") {
			args = append(args, now)
		}
		if err := s.strings(ctx, &ids, s.rebind(c.query+" LIMIT 21"), args...); err != nil {
			return nil, s.Classify(err)
		}
		if c.name == "stopped runs" && opts.Dead != nil {
			held, err := s.deadHolders(ctx, now, opts.Dead)
			if err != nil {
				return nil, s.Classify(err)
			}
			ids = append(ids, held...)
		}
		f := Finding{Check: c.name, Status: FindingOK}
		if len(ids) > 0 {
			f.Status, f.Detail, f.Runs = c.status, c.detail, ids[:min(len(ids), 20)]
			if len(ids) > 20 {
				f.Detail += " (the first 20)"
			}
		}
		r.Findings = append(r.Findings, f)
	}
	return r, nil
}

// strings reads a one-column query.
func (s *DB) strings(ctx context.Context, out *[]string, q string, args ...any) error {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return err
		}
		*out = append(*out, v)
	}
	return rows.Err()
}

// deadHolders returns the running runs whose lease has not run out but
// whose holder is provably dead (at most 21).
func (s *DB) deadHolders(ctx context.Context, now int64, dead func(string) bool) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT id, owner FROM runs
		WHERE status = 'running' AND owner IS NOT NULL AND lease_expires >= ? ORDER BY id`), now)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() && len(ids) < 21 {
		var id, owner string
		if err := rows.Scan(&id, &owner); err != nil {
			return nil, err
		}
		if dead(owner) {
			ids = append(ids, id)
		}
	}
	return ids, rows.Err()
}
