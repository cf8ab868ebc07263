package sqlstore

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentctl/agentctl/engine/store"
)

// The sessions table keeps a session's SHA-256 hash as 64 hex digits,
// never its secret.
const sessionCols = `hash, token_hash, user_name, user_groups, created_at, expires_at`

// CreateSession implements store.ServerStore.
func (s *DB) CreateSession(ctx context.Context, sn *store.Session) error {
	if sn.CreatedAt.IsZero() {
		sn.CreatedAt = s.now()
	}
	if sn.Groups == nil {
		sn.Groups = []string{}
	}
	groups, err := json.Marshal(sn.Groups)
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	sn.CreatedAt, sn.ExpiresAt = fromMS(ms(sn.CreatedAt)), fromMS(ms(sn.ExpiresAt))
	err = s.tx(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE expires_at <= ?`, ms(sn.CreatedAt)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO sessions(`+sessionCols+`) VALUES (?, ?, ?, ?, ?, ?)`,
			hex.EncodeToString(sn.Hash[:]), hex.EncodeToString(sn.TokenHash[:]), sn.User, string(groups), ms(sn.CreatedAt), ms(sn.ExpiresAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("create session: %w", s.Classify(err))
	}
	return nil
}

// SessionByHash implements store.ServerStore.
func (s *DB) SessionByHash(ctx context.Context, hash [32]byte) (*store.Session, error) {
	var sn store.Session
	var h, tok, groups string
	var created, expires int64
	err := s.queryRow(ctx, `SELECT `+sessionCols+` FROM sessions WHERE hash = ?`, hex.EncodeToString(hash[:])).
		Scan(&h, &tok, &sn.User, &groups, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &store.NotFoundError{What: "no such session"}
	}
	if err != nil {
		return nil, fmt.Errorf("look up session: %w", s.Classify(err))
	}
	if err := json.Unmarshal([]byte(groups), &sn.Groups); err != nil {
		return nil, fmt.Errorf("session: groups: %w", err)
	}
	if b, err := hex.DecodeString(tok); err != nil || len(b) != len(sn.TokenHash) {
		return nil, fmt.Errorf("session: malformed token hash")
	} else {
		copy(sn.TokenHash[:], b)
	}
	sn.Hash, sn.CreatedAt, sn.ExpiresAt = hash, fromMS(created), fromMS(expires)
	return &sn, nil
}

// DeleteSession implements store.ServerStore.
func (s *DB) DeleteSession(ctx context.Context, hash [32]byte) error {
	if _, err := s.exec(ctx, `DELETE FROM sessions WHERE hash = ?`, hex.EncodeToString(hash[:])); err != nil {
		return fmt.Errorf("delete session: %w", s.Classify(err))
	}
	return nil
}
