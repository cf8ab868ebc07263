package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/chain"
)

// The audit chain (package chain): each transaction that records a
// decision, a refusal, an escalation, a rule denial or an execution
// outcome queues its records (txn.audit) and appends them, linked to the
// chain's head, just before it commits: in the same transaction, after
// every other lock it takes. Appends serialise per database: SQLite's
// writers do already; PostgreSQL's take Dialect.ChainLock first, so that
// two transactions never link to the same head.

// ChainMigration creates the chain's table and that of its signed heads
// (checkpoints). idType is the backend's type of ids, intType that of
// milliseconds and sequence numbers.
func ChainMigration(idType, intType string) string {
	return strings.NewReplacer("ID_TYPE", idType, "INT_TYPE", intType).Replace(`CREATE TABLE audit_chain (
		seq       INT_TYPE PRIMARY KEY,
		prev      TEXT NOT NULL,
		digest    TEXT NOT NULL,
		hash      TEXT NOT NULL,
		kind      TEXT NOT NULL,
		run_id    ID_TYPE,
		decision  INT_TYPE,
		record    TEXT,
		at        INT_TYPE NOT NULL,
		pruned_at INT_TYPE
	);
	CREATE INDEX audit_chain_run ON audit_chain(run_id);
	CREATE INDEX audit_chain_decision ON audit_chain(decision);
	CREATE TABLE audit_checkpoints (
		seq       INT_TYPE NOT NULL,
		hash      TEXT NOT NULL,
		key_id    TEXT NOT NULL,
		signature TEXT NOT NULL,
		signer    TEXT NOT NULL,
		at        INT_TYPE NOT NULL,
		PRIMARY KEY (seq, key_id)
	);`)
}

// audit queues r, appended to the chain when the transaction commits.
func (t *txn) audit(r chain.Record) { t.chain = append(t.chain, r) }

// appendChain appends the queued records after the chain's head.
func (t *txn) appendChain(ctx context.Context) error {
	if len(t.chain) == 0 {
		return nil
	}
	if t.s.d.ChainLock != "" {
		if _, err := t.tx.ExecContext(ctx, t.s.d.ChainLock); err != nil {
			return fmt.Errorf("audit chain: lock: %w", err)
		}
	}
	var prev *chain.Link
	var head chain.Link
	err := t.QueryRowContext(ctx, `SELECT seq, hash FROM audit_chain ORDER BY seq DESC LIMIT 1`).Scan(&head.Seq, &head.Hash)
	switch {
	case err == nil:
		prev = &head
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("audit chain: head: %w", err)
	}
	for _, r := range t.chain {
		l, err := chain.Next(prev, r)
		if err != nil {
			return err
		}
		var dec any
		if l.Decision != 0 {
			dec = l.Decision
		}
		_, err = t.ExecContext(ctx, `INSERT INTO audit_chain(seq, prev, digest, hash, kind, run_id, decision, record, at)
			VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)`, l.Seq, l.Prev, l.Digest, l.Hash, l.Kind, l.RunID, dec, string(l.Record), l.At)
		if err != nil {
			return fmt.Errorf("audit chain: append record %d: %w", l.Seq, err)
		}
		prev = &l
	}
	t.chain = nil
	return nil
}

// decisionRecord is the chain's record of decision d, row id, made at
// milliseconds at.
func decisionRecord(id int64, d *store.Decision, at int64) chain.Record {
	return chain.Record{Kind: chain.KindDecision, Decision: id, RunID: d.RunID, CallID: d.CallID, Action: string(d.Action),
		By: d.By, OSUser: d.OSUser, Via: d.Via, Reason: d.Reason, ArgsBefore: string(d.ArgsBefore),
		ArgsAfter: string(d.ArgsAfter), Data: string(d.Data), At: at}
}

// outcome queues the record of move m when it ends an execution.
func (t *txn) outcome(m store.Move, now time.Time) {
	if m.From != store.CallExecuting {
		return
	}
	switch m.To {
	case store.CallSucceeded, store.CallFailed, store.CallInterrupted:
		t.audit(outcomeRecord(m, now))
	}
}

// outcomeRecord is the chain's record of a call's end, move m: its
// status and the SHA-256 of its result.
func outcomeRecord(m store.Move, now time.Time) chain.Record {
	return chain.Record{Kind: chain.KindOutcome, RunID: m.RunID, CallID: m.CallID, Status: string(m.To),
		Result: chain.Result(m.Result), At: ms(now)}
}

// denied queues the record of a new call a policy rule denied.
func (t *txn) denied(runID string, c *store.Call, now time.Time) {
	if c.Gate.Verdict != store.GateDenied || c.Gate.Rule == nil {
		return
	}
	t.audit(chain.Record{Kind: chain.KindRuleDenied, RunID: runID, CallID: c.ID, Rule: c.Gate.Rule.Name,
		Reason: c.Gate.Rule.Reason, Result: chain.Result(c.Result), At: ms(now)})
}

// pruneChain marks the audit records of pruned runs: each keeps its
// digest and hash (a tombstone), so the chain stays verifiable; its
// content goes, unless keep (prune --keep-audit) keeps the audit.
func (s *DB) pruneChain(ctx context.Context, tx *txn, ids []string, keep bool) error {
	q := `UPDATE audit_chain SET pruned_at = ?, record = NULL WHERE run_id IN (`
	if keep {
		q = `UPDATE audit_chain SET pruned_at = ? WHERE run_id IN (`
	}
	now := ms(s.now())
	err := inChunks(ids, func(ph string, args []any) error {
		_, err := tx.ExecContext(ctx, q+ph+`) AND pruned_at IS NULL`, append([]any{now}, args...)...)
		return err
	})
	if err != nil {
		return fmt.Errorf("audit chain: mark pruned records: %w", err)
	}
	return nil
}
