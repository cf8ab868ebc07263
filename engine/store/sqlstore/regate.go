package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentctl/agentctl/engine/store"
)

// Regate implements store.Store: one conditional update, with its events,
// in one transaction.
func (s *DB) Regate(ctx context.Context, runID, callID string, old, gate store.Gate, ev ...store.Event) error {
	now := s.now()
	err := s.tx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE calls SET gate = ?, updated_at = ?
			WHERE run_id = ? AND call_id = ? AND status = 'pending' AND kind = 'approval' AND gate = ?`,
			store.EncodeGate(gate), ms(now), runID, callID, store.EncodeGate(old))
		if err := one(res, err, store.ErrConflict); errors.Is(err, store.ErrConflict) {
			return conflict(ctx, tx, runID, callID)
		} else if err != nil {
			return err
		}
		return appendEvents(ctx, tx, now, ev)
	})
	if err != nil {
		return fmt.Errorf("preview of call %s: %w", callID, err)
	}
	return nil
}
