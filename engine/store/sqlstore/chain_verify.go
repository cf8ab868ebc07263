package sqlstore

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/chain"
)

// chainBatch is how many links verification reads at a time.
const chainBatch = 1000

var _ store.ChainStore = (*DB)(nil)

// ChainLinks implements store.ChainStore.
func (s *DB) ChainLinks(ctx context.Context, after int64, limit int) ([]chain.Link, error) {
	rows, err := s.query(ctx, `SELECT seq, prev, digest, hash, kind, run_id, decision, record, at, pruned_at
		FROM audit_chain WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("audit chain: %w", s.Classify(err))
	}
	defer rows.Close()
	var out []chain.Link
	for rows.Next() {
		var l chain.Link
		var run, record sql.NullString
		var dec, pruned sql.NullInt64
		if err := rows.Scan(&l.Seq, &l.Prev, &l.Digest, &l.Hash, &l.Kind, &run, &dec, &record, &l.At, &pruned); err != nil {
			return nil, fmt.Errorf("audit chain: %w", err)
		}
		l.RunID, l.Decision, l.PrunedAt = run.String, dec.Int64, pruned.Int64
		if record.Valid {
			l.Record = json.RawMessage(record.String)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// ChainHead implements store.ChainStore.
func (s *DB) ChainHead(ctx context.Context) (chain.Head, bool, error) {
	var h chain.Head
	err := s.queryRow(ctx, `SELECT seq, hash FROM audit_chain ORDER BY seq DESC LIMIT 1`).Scan(&h.Seq, &h.Hash)
	if errors.Is(err, sql.ErrNoRows) {
		return h, false, nil
	}
	if err != nil {
		return h, false, fmt.Errorf("audit chain head: %w", s.Classify(err))
	}
	return h, true, nil
}

// SaveCheckpoint implements store.ChainStore.
func (s *DB) SaveCheckpoint(ctx context.Context, h chain.SignedHead, signer string) error {
	_, err := s.exec(ctx, `INSERT INTO audit_checkpoints(seq, hash, key_id, signature, signer, at) VALUES(?, ?, ?, ?, ?, ?)
		ON CONFLICT (seq, key_id) DO NOTHING`, h.Seq, h.Hash, h.Key, h.Signature, signer, h.At)
	if err != nil {
		return fmt.Errorf("save audit checkpoint: %w", s.Classify(err))
	}
	return nil
}

// VerifyChain implements store.ChainStore.
func (s *DB) VerifyChain(ctx context.Context, pub ed25519.PublicKey) (*store.ChainReport, error) {
	rep := &store.ChainReport{}
	var v chain.Verifier
	for after := int64(0); ; {
		links, err := s.ChainLinks(ctx, after, chainBatch)
		if err != nil {
			return nil, err
		}
		for _, l := range links {
			if !v.Add(l) {
				break
			}
		}
		if rep.Mismatch == nil {
			if rep.Mismatch, err = s.checkDecisions(ctx, links); err != nil {
				return nil, err
			}
		}
		if len(links) < chainBatch || v.Report().Problem != nil {
			break
		}
		after = links[len(links)-1].Seq
	}
	rep.Report = v.Report()
	if err := s.unchained(ctx, rep); err != nil {
		return nil, err
	}
	if err := s.checkCheckpoints(ctx, rep, pub); err != nil {
		return nil, err
	}
	return rep, nil
}

// checkDecisions compares the decisions table's rows with the decision
// links among links (those of runs not pruned): the first that differs or
// is gone.
func (s *DB) checkDecisions(ctx context.Context, links []chain.Link) (*chain.Problem, error) {
	if p, err := s.checkPruned(ctx, links); p != nil || err != nil {
		return p, err
	}
	var ids []any
	for _, l := range links {
		if l.Kind == chain.KindDecision && l.PrunedAt == 0 {
			ids = append(ids, l.Decision)
		}
	}
	recs, err := decisionRecords(ctx, s.query, ids)
	if err != nil {
		return nil, s.Classify(err)
	}
	found := map[int64][]byte{}
	for id, r := range recs {
		if found[id], err = r.Canonical(); err != nil {
			return nil, err
		}
	}
	for _, l := range links {
		if l.Kind != chain.KindDecision || l.PrunedAt != 0 || l.Record == nil {
			continue
		}
		c, ok := found[l.Decision]
		switch {
		case !ok:
			return &chain.Problem{Seq: l.Seq, Why: fmt.Sprintf("decision %d of run %s is gone from the decisions table, but its run was not pruned", l.Decision, l.RunID)}, nil
		case !bytes.Equal(c, l.Record):
			return &chain.Problem{Seq: l.Seq, Why: fmt.Sprintf("decision %d of run %s in the decisions table differs from its chained record in %s: it was edited",
				l.Decision, l.RunID, strings.Join(differ(c, l.Record), ", "))}, nil
		}
	}
	return nil, nil
}

// decisionRecords reads the decisions ids name, through q, as the
// chain's records of them, by id.
func decisionRecords(ctx context.Context, q queryFunc, ids []any) (map[int64]chain.Record, error) {
	out := map[int64]chain.Record{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := q(ctx, `SELECT id, run_id, call_id, action, by_name, os_user, via, reason, args_before, args_after, data, at
		FROM decisions WHERE id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`, ids...)
	if err != nil {
		return nil, fmt.Errorf("audit chain: decisions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d store.Decision
		var before, after, data sql.NullString
		var id, at int64
		if err := rows.Scan(&id, &d.RunID, &d.CallID, &d.Action, &d.By, &d.OSUser, &d.Via, &d.Reason, &before, &after, &data, &at); err != nil {
			return nil, fmt.Errorf("audit chain: decisions: %w", err)
		}
		d.ArgsBefore, d.ArgsAfter, d.Data = raw(before), raw(after), raw(data)
		out[id] = decisionRecord(id, &d, at)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit chain: decisions: %w", err)
	}
	return out, nil
}

// differ names the members two JSON objects hold differently.
func differ(a, b []byte) []string {
	var x, y map[string]any
	json.Unmarshal(a, &x)
	json.Unmarshal(b, &y)
	var out []string
	for k := range x {
		if fmt.Sprint(x[k]) != fmt.Sprint(y[k]) {
			out = append(out, k)
		}
	}
	for k := range y {
		if _, ok := x[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// unchained counts the decisions made before the chain began that are
// not in it (a copied one is), and finds a later one that is not in it.
func (s *DB) unchained(ctx context.Context, rep *store.ChainReport) error {
	if rep.Records == 0 && rep.Problem == nil {
		return s.queryRow(ctx, `SELECT count(*) FROM decisions`).Scan(&rep.Unchained)
	}
	start := rep.First.At
	if err := s.queryRow(ctx, `SELECT count(*) FROM decisions d WHERE at < ? AND NOT EXISTS
		(SELECT 1 FROM audit_chain c WHERE c.decision = d.id)`, start).Scan(&rep.Unchained); err != nil {
		return fmt.Errorf("audit chain: decisions before it: %w", s.Classify(err))
	}
	if rep.Mismatch != nil {
		return nil
	}
	var id, at int64
	var run string
	err := s.queryRow(ctx, `SELECT id, run_id, at FROM decisions d WHERE at >= ? AND NOT EXISTS
		(SELECT 1 FROM audit_chain c WHERE c.decision = d.id AND c.pruned_at IS NULL) ORDER BY id LIMIT 1`, start).Scan(&id, &run, &at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("audit chain: decisions not in it: %w", s.Classify(err))
	}
	rep.Mismatch = &chain.Problem{Why: fmt.Sprintf("decision %d of run %s (%s) is in the decisions table but not in the chain: it was added behind agentctl's back, or its record deleted",
		id, run, chain.Stamp(at))}
	return nil
}

// checkCheckpoints checks each stored signed head against the chain.
func (s *DB) checkCheckpoints(ctx context.Context, rep *store.ChainReport, pub ed25519.PublicKey) error {
	rows, err := s.query(ctx, `SELECT seq, hash, key_id, signature, at FROM audit_checkpoints ORDER BY seq, at`)
	if err != nil {
		return fmt.Errorf("audit checkpoints: %w", s.Classify(err))
	}
	var heads []chain.SignedHead
	for rows.Next() {
		var h chain.SignedHead
		if err := rows.Scan(&h.Seq, &h.Hash, &h.Key, &h.Signature, &h.At); err != nil {
			rows.Close()
			return fmt.Errorf("audit checkpoints: %w", err)
		}
		heads = append(heads, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("audit checkpoints: %w", s.Classify(err))
	}
	for i := range heads {
		h := &heads[i]
		rep.Checkpoints, rep.Latest = rep.Checkpoints+1, h
		why := s.checkpointWrong(ctx, rep, h, pub)
		if why == "" && pub != nil {
			rep.Verified++
		}
		if why != "" && rep.Checkpoint == nil {
			rep.Checkpoint = &chain.Problem{Seq: h.Seq, Why: fmt.Sprintf("the head signed at %s (key %s): %s", chain.Stamp(h.At), h.Key, why)}
		}
	}
	return nil
}

// checkpointWrong says what is wrong with signed head h ("" nothing).
func (s *DB) checkpointWrong(ctx context.Context, rep *store.ChainReport, h *chain.SignedHead, pub ed25519.PublicKey) string {
	if pub != nil {
		if h.Key != chain.KeyID(pub) {
			return fmt.Sprintf("it is not signed by the key given (%s): a head signed with another key proves nothing", chain.KeyID(pub))
		}
		if err := h.Verify(pub); err != nil {
			return "its signature does not verify: it was forged or altered"
		}
	}
	if rep.Problem == nil && h.Seq > rep.Head.Seq {
		return fmt.Sprintf("it covers record %d, but the chain ends at record %d: records were removed from its end", h.Seq, rep.Head.Seq)
	}
	var hash string
	err := s.queryRow(ctx, `SELECT hash FROM audit_chain WHERE seq = ?`, h.Seq).Scan(&hash)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Sprintf("record %d is gone", h.Seq)
	case err != nil:
		return err.Error()
	case hash != h.Hash:
		return fmt.Sprintf("record %d's hash is %s, signed as %s: the chain was rewritten", h.Seq, chain.Short(hash), chain.Short(h.Hash))
	}
	return ""
}

// checkPruned finds, among links, a record marked pruned whose run still
// exists: prune removes the run with it, so the mark was made behind
// agentctl's back, to hide a deleted decision.
func (s *DB) checkPruned(ctx context.Context, links []chain.Link) (*chain.Problem, error) {
	var runs []any
	for _, l := range links {
		if l.PrunedAt != 0 && l.RunID != "" && !slices.Contains(runs, any(l.RunID)) {
			runs = append(runs, l.RunID)
		}
	}
	if len(runs) == 0 {
		return nil, nil
	}
	rows, err := s.query(ctx, `SELECT id FROM runs WHERE id IN (?`+strings.Repeat(", ?", len(runs)-1)+`)`, runs...)
	if err != nil {
		return nil, fmt.Errorf("audit chain: pruned runs: %w", s.Classify(err))
	}
	defer rows.Close()
	alive := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("audit chain: pruned runs: %w", err)
		}
		alive[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit chain: pruned runs: %w", s.Classify(err))
	}
	for _, l := range links {
		if l.PrunedAt != 0 && alive[l.RunID] {
			return &chain.Problem{Seq: l.Seq, Why: fmt.Sprintf("record %d is marked pruned, but its run %s was not pruned: it was emptied behind agentctl's back", l.Seq, l.RunID)}, nil
		}
	}
	return nil, nil
}
