package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// manyWaiting opens a database holding n suspended runs, each with one
// call waiting for approval and one that succeeded, and n completed runs.
func manyWaiting(tb testing.TB, n int) *DB {
	tb.Helper()
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(tb.TempDir(), "a.db"), Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	tx, err := db.SQL().BeginTx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	exec := func(q string, args ...any) {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			tb.Fatal(err)
		}
	}
	exec(`INSERT INTO specs(hash, body) VALUES ('h', 's')`)
	for i := range 2 * n {
		id, status := fmt.Sprintf("01R%07d", i), "suspended"
		if i%2 == 1 {
			status = "completed"
		}
		agent := []string{"oncall", "release", "db"}[i%3]
		exec(`INSERT INTO runs(id, agent, status, input, spec_hash, created_at, updated_at) VALUES (?, ?, ?, 'in', 'h', ?, ?)`,
			id, agent, status, i, i)
		exec(`INSERT INTO calls(run_id, call_id, seq, step, tool, args, status, created_at, updated_at) VALUES (?, 'call_1', 1, 1, 't', '{}', 'succeeded', ?, ?)`,
			id, i, i)
		if status == "suspended" {
			exec(`INSERT INTO calls(run_id, call_id, seq, step, tool, args, status, kind, created_at, updated_at) VALUES (?, 'call_2', 2, 1, 't', '{}', 'pending', 'approval', ?, ?)`,
				id, 2*n-i, 2*n-i)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	return db
}

// The inbox pages from the calls_waiting index: no scan of every call,
// no sort.
func TestWaitingUsesIndex(t *testing.T) {
	db := manyWaiting(t, 10)
	var plan []string
	// The query sqlstore.DB.Waiting makes, with an agent and a cursor.
	rows, err := db.SQL().Query(`EXPLAIN QUERY PLAN SELECT c.run_id, r.id FROM calls c CROSS JOIN runs r
		WHERE r.id = c.run_id AND c.status IN ('pending', 'interrupted') AND c.kind != 'delegation' AND r.agent = ?
		AND (c.created_at, c.run_id, c.seq) > (?, ?, ?)
		ORDER BY c.created_at, c.run_id, c.seq LIMIT 100`, "oncall", 0, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	p := strings.Join(plan, "; ")
	if !strings.Contains(p, "calls_waiting") || strings.Contains(p, "TEMP B-TREE") {
		t.Errorf("the inbox query plan: %s; want the calls_waiting index and no sort", p)
	}
}

// BenchmarkWaiting pages the inbox of 10,000 calls waiting for approval
// (among 30,000 calls): the first page, a page from the middle, and the
// first page of one agent's calls.
func BenchmarkWaiting(b *testing.B) {
	db := manyWaiting(b, 10000)
	ctx := context.Background()
	first, err := db.Waiting(ctx, store.WaitingFilter{Limit: 5000})
	if err != nil || len(first) != 5000 {
		b.Fatal(len(first), err)
	}
	middle := first[len(first)-1].Cursor
	for _, bc := range []struct {
		name string
		f    store.WaitingFilter
	}{
		{"first", store.WaitingFilter{}},
		{"middle", store.WaitingFilter{After: middle}},
		{"agent", store.WaitingFilter{Agent: "release"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				ws, err := db.Waiting(ctx, bc.f)
				if err != nil || len(ws) != 100 {
					b.Fatal(len(ws), err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.ReportMetric(float64(quantile(lat, 0.5).Microseconds()), "p50-µs")
			b.ReportMetric(float64(quantile(lat, 0.99).Microseconds()), "p99-µs")
		})
	}
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}
