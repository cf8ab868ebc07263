package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// ReplayMigration is the schema of the record of signed requests already
// seen (FirstSeen), on both backends, given how the backend writes an id
// column.
func ReplayMigration(idType string) string {
	return strings.ReplaceAll(`CREATE TABLE replays (
		id      ID_TYPE PRIMARY KEY,
		seen_at BIGINT NOT NULL
	);
	CREATE INDEX replays_seen ON replays(seen_at);`, "ID_TYPE", idType)
}

// FirstSeen implements store.ServerStore.
func (s *DB) FirstSeen(ctx context.Context, key string, at, forget time.Time) (bool, error) {
	fresh := false
	err := s.tx(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM replays WHERE seen_at < ?`, ms(forget)); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO replays(id, seen_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, key, ms(at))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		fresh = n == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record a request as seen: %w", s.Classify(err))
	}
	return fresh, nil
}
