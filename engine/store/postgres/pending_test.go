package postgres_test

import (
	"context"
	"strings"
	"testing"
)

// The calls waiting in a page of runs (agentctl list) are read through
// calls_pending, by run: not through calls_open, among every call
// waiting in the database, which grew with it (docs/scale.md).
func TestPendingUsesIndex(t *testing.T) {
	ctx, db := context.Background(), newDB(t)
	for _, q := range []string{
		`INSERT INTO specs(hash, body) VALUES ('h', '')`,
		`INSERT INTO runs(id, agent, status, input, spec_hash, created_at, updated_at)
			SELECT 'R' || lpad(i::text, 6, '0'), 'oncall', 'suspended', 'in', 'h', i, i FROM generate_series(1, 5000) i`,
		`INSERT INTO calls(run_id, call_id, seq, step, tool, args, status, kind, created_at, updated_at)
			SELECT 'R' || lpad(i::text, 6, '0'), 'call_' || s, s, s, 't', '{}', CASE s WHEN 3 THEN 'pending' ELSE 'succeeded' END,
				'approval', i, i FROM generate_series(1, 5000) i, generate_series(1, 3) s`,
		`ANALYZE`,
	} {
		if _, err := db.SQL().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// The query sqlstore.DB.Pending makes for a page of three runs.
	rows, err := db.SQL().QueryContext(ctx, `EXPLAIN SELECT run_id, seq FROM calls
		WHERE status IN ('pending', 'interrupted') AND run_id IN ($1, $2, $3) ORDER BY run_id, seq`, "R000001", "R002500", "R004999")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, strings.TrimSpace(line))
	}
	if p := strings.Join(plan, "; "); !strings.Contains(p, "calls_pending") {
		t.Errorf("the pending calls' plan: %s; want the calls_pending index", p)
	}
}
