package sqlstore

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// The tokens table keeps a token's SHA-256 hash as 64 hex digits, never
// the secret; its id is the first 12 of them.
const tokenCols = `id, user_name, user_groups, hash, created_at, created_by, expires_at, revoked_at`

func scanToken(sc scanner) (*store.Token, error) {
	var t store.Token
	var groups, hash string
	var created, expires int64
	var revoked sql.NullInt64
	if err := sc.Scan(&t.ID, &t.User, &groups, &hash, &created, &t.CreatedBy, &expires, &revoked); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(groups), &t.Groups); err != nil {
		return nil, fmt.Errorf("token %s: groups: %w", t.ID, err)
	}
	if b, err := hex.DecodeString(hash); err != nil || len(b) != len(t.Hash) {
		return nil, fmt.Errorf("token %s: malformed hash", t.ID)
	} else {
		copy(t.Hash[:], b)
	}
	t.CreatedAt, t.ExpiresAt = fromMS(created), fromMS(expires)
	if revoked.Valid {
		t.RevokedAt = fromMS(revoked.Int64)
	}
	return &t, nil
}

// CreateToken implements store.ServerStore. An empty ID is the first 12
// hex digits of the hash; a zero CreatedAt is now.
func (s *DB) CreateToken(ctx context.Context, t *store.Token) error {
	if t.ID == "" {
		t.ID = hex.EncodeToString(t.Hash[:6])
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = s.now()
	}
	if t.Groups == nil {
		t.Groups = []string{}
	}
	groups, err := json.Marshal(t.Groups)
	if err != nil {
		return fmt.Errorf("create token: %w", err)
	}
	t.CreatedAt, t.ExpiresAt = fromMS(ms(t.CreatedAt)), fromMS(ms(t.ExpiresAt))
	err = s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tokens(`+tokenCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.User, string(groups), hex.EncodeToString(t.Hash[:]), ms(t.CreatedAt), t.CreatedBy, ms(t.ExpiresAt),
			msOrNil(t.RevokedAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("create token: %w", s.Classify(err))
	}
	return nil
}

// TokenByHash implements store.ServerStore.
func (s *DB) TokenByHash(ctx context.Context, hash [32]byte) (*store.Token, error) {
	t, err := scanToken(s.queryRow(ctx, `SELECT `+tokenCols+` FROM tokens WHERE hash = ?`, hex.EncodeToString(hash[:])))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &store.NotFoundError{What: "no such token"}
	}
	if err != nil {
		return nil, fmt.Errorf("look up token: %w", err)
	}
	return t, nil
}

// Tokens implements store.ServerStore.
func (s *DB) Tokens(ctx context.Context) ([]*store.Token, error) {
	rows, err := s.query(ctx, `SELECT `+tokenCols+` FROM tokens ORDER BY created_at DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	defer rows.Close()
	var out []*store.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("tokens: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// RevokeToken implements store.ServerStore. A token already revoked is
// returned, as it stands, with an error that matches store.ErrConflict
// and says when it was revoked.
func (s *DB) RevokeToken(ctx context.Context, prefix string, at time.Time) (*store.Token, error) {
	var t *store.Token
	err := s.tx(ctx, func(tx *txn) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+tokenCols+` FROM tokens WHERE id >= ? AND id < ? ORDER BY id LIMIT 5`,
			prefix, prefix+"\U0010FFFF")
		if err != nil {
			return err
		}
		var found []*store.Token
		for rows.Next() {
			t, err := scanToken(rows)
			if err != nil {
				rows.Close()
				return err
			}
			found = append(found, t)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		switch len(found) {
		case 0:
			return &store.NotFoundError{What: fmt.Sprintf("no token id starts with %q", prefix)}
		case 1:
		default:
			ids := make([]string, len(found))
			for i, f := range found {
				ids[i] = f.ID
			}
			return &store.AmbiguousError{Prefix: prefix, Matches: ids}
		}
		t = found[0]
		if !t.RevokedAt.IsZero() {
			return &revokedError{id: t.ID, at: t.RevokedAt}
		}
		t.RevokedAt = fromMS(ms(at))
		_, err = tx.ExecContext(ctx, `UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, ms(at), t.ID)
		return err
	})
	var ae *store.AmbiguousError
	switch {
	case errors.Is(err, store.ErrNotFound), errors.As(err, &ae):
		return nil, err
	case errors.Is(err, store.ErrConflict):
		return t, err
	case err != nil:
		return nil, fmt.Errorf("revoke token %s: %w", prefix, s.Classify(err))
	}
	return t, nil
}

// revokedError reports a token revoked already. It matches
// store.ErrConflict.
type revokedError struct {
	id string
	at time.Time
}

func (e *revokedError) Error() string {
	return fmt.Sprintf("token %s was already revoked at %s", e.id, e.at.UTC().Format(time.RFC3339))
}

func (e *revokedError) Is(target error) bool { return target == store.ErrConflict }

// Stats implements store.ServerStore: its three counts are read in one
// read transaction (one snapshot).
func (s *DB) Stats(ctx context.Context) (store.Stats, error) {
	st := store.Stats{Runs: map[store.Status]int{}, Waiting: map[store.Kind]int{}}
	opts := &sql.TxOptions{ReadOnly: true}
	if s.d.Dollar {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return st, fmt.Errorf("stats: %w", s.Classify(err))
	}
	defer tx.Rollback()
	count := func(q string, add func(k string, n int)) error {
		rows, err := tx.QueryContext(ctx, q)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				return err
			}
			add(k, n)
		}
		return rows.Err()
	}
	err = count(`SELECT status, count(*) FROM runs GROUP BY status`, func(k string, n int) { st.Runs[store.Status(k)] = n })
	if err == nil {
		err = count(`SELECT CASE WHEN status = 'interrupted' THEN 'interrupted' ELSE kind END, count(*) FROM calls
			WHERE `+waitingCalls+` GROUP BY 1`, func(k string, n int) { st.Waiting[store.Kind(k)] += n })
	}
	var oldest sql.NullInt64
	if err == nil {
		err = tx.QueryRowContext(ctx, `SELECT min(created_at) FROM calls WHERE `+waitingCalls+`
			AND status = 'pending' AND kind = 'approval'`).Scan(&oldest)
	}
	if err != nil {
		return st, fmt.Errorf("stats: %w", s.Classify(err))
	}
	if oldest.Valid {
		st.OldestWaiting = fromMS(oldest.Int64)
	}
	return st, nil
}
