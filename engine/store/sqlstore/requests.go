package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// RequestsMigration is the schema of the requests that changed a run
// under an idempotency key (store.Request), on both backends, given how
// the backend writes an id column.
func RequestsMigration(idType string) string {
	return strings.ReplaceAll(`CREATE TABLE requests (
		key    ID_TYPE PRIMARY KEY,
		hash   TEXT NOT NULL,
		run_id ID_TYPE NOT NULL,
		at     BIGINT NOT NULL
	);
	CREATE INDEX requests_at ON requests(at);`, "ID_TYPE", idType)
}

// recordRequest records req as the request that changed run runID, in
// the transaction of the change, forgetting the keys that have expired.
// A key recorded within store.RequestTTL is store.ErrRequestSeen.
func recordRequest(ctx context.Context, tx *txn, now time.Time, req *store.Request, runID string) error {
	if req == nil || req.Key == "" {
		return nil
	}
	expired := ms(now.Add(-store.RequestTTL))
	if _, err := tx.ExecContext(ctx, `DELETE FROM requests WHERE at < ?`, expired); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO requests(key, hash, run_id, at) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO NOTHING`,
		req.Key, req.Hash, runID, ms(now))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return cmpErr(err, store.ErrRequestSeen)
	}
	return nil
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// Requested implements store.ServerStore.
func (s *DB) Requested(ctx context.Context, key string) (*store.Requested, error) {
	var q store.Requested
	var at int64
	err := s.queryRow(ctx, `SELECT hash, run_id, at FROM requests WHERE key = ? AND at >= ?`,
		key, ms(s.now().Add(-store.RequestTTL))).Scan(&q.Hash, &q.RunID, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("request: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("request: %w", s.Classify(err))
	}
	q.At = fromMS(at)
	return &q, nil
}
