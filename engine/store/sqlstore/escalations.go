package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/chain"
)

// EscalationsMigration creates the table of the escalation steps that
// happened, one row per step of a call: its primary key makes each
// happen once, whichever process is first. idType is the backend's type
// of ids, intType that of milliseconds.
func EscalationsMigration(idType, intType string) string {
	return strings.NewReplacer("ID_TYPE", idType, "INT_TYPE", intType).Replace(`CREATE TABLE escalations (
		run_id  ID_TYPE NOT NULL REFERENCES runs(id),
		call_id ID_TYPE NOT NULL,
		step    INTEGER NOT NULL,
		kind    TEXT NOT NULL,
		at      INT_TYPE NOT NULL,
		PRIMARY KEY (run_id, call_id, step)
	);`)
}

// Escalate implements store.Store.
func (s *DB) Escalate(ctx context.Context, x *store.Escalation, ev ...store.Event) (bool, error) {
	now := s.now()
	fired := false
	err := s.tx(ctx, func(tx *txn) error {
		if err := tx.lockRun(ctx, x.RunID); err != nil {
			return err
		}
		ok, err := escalate(ctx, tx, x, now)
		if err != nil || !ok {
			return err
		}
		fired = true
		return appendEvents(ctx, tx, now, ev)
	})
	if err != nil {
		return false, fmt.Errorf("escalate call %s of run %s (step %d): %w", x.CallID, x.RunID, x.Step, err)
	}
	return fired, nil
}

// escalate records step x in the caller's transaction, only while its
// call waits for approval and the step is not recorded yet; it reports
// whether it did.
func escalate(ctx context.Context, tx *txn, x *store.Escalation, now time.Time) (bool, error) {
	at := now
	if !x.At.IsZero() {
		at = x.At
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO escalations(run_id, call_id, step, kind, at)
		SELECT ?, ?, CAST(? AS INTEGER), ?, CAST(? AS BIGINT) WHERE EXISTS (SELECT 1 FROM calls
			WHERE run_id = ? AND call_id = ? AND status = 'pending' AND kind = 'approval')
		ON CONFLICT (run_id, call_id, step) DO NOTHING`,
		x.RunID, x.CallID, x.Step, x.Kind, ms(at), x.RunID, x.CallID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if n == 1 {
		tx.audit(chain.Record{Kind: chain.KindEscalation, RunID: x.RunID, CallID: x.CallID, Step: x.Step, Action: x.Kind, At: ms(at)})
	}
	return n == 1, err
}

// Escalations implements store.Store.
func (s *DB) Escalations(ctx context.Context, runIDs []string) (map[string][]*store.Escalation, error) {
	out := map[string][]*store.Escalation{}
	err := inChunks(runIDs, func(ph string, args []any) error {
		rows, err := s.query(ctx, `SELECT run_id, call_id, step, kind, at FROM escalations
			WHERE run_id IN (`+ph+`) ORDER BY run_id, at, call_id, step`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var x store.Escalation
			var at int64
			if err := rows.Scan(&x.RunID, &x.CallID, &x.Step, &x.Kind, &at); err != nil {
				return err
			}
			x.At = fromMS(at)
			out[x.RunID] = append(out[x.RunID], &x)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("escalations: %w", err)
	}
	return out, nil
}

// AwaitingApproval implements store.Store.
func (s *DB) AwaitingApproval(ctx context.Context) ([]string, error) {
	ids, err := s.runIDs(ctx, `SELECT DISTINCT run_id FROM calls
		WHERE status IN ('pending', 'interrupted') AND kind = 'approval' ORDER BY run_id`)
	if err != nil {
		return nil, fmt.Errorf("calls awaiting approval: %w", err)
	}
	return ids, nil
}

// runIDs returns the one column of ids query q selects.
func (s *DB) runIDs(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
