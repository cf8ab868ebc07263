package sqlite

import (
	"context"
	"crypto/sha256"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlstore"
)

// TestCopy: Copy matches rows by their natural identity, not by integer
// ids; it brings a run the target holds in an earlier state up to date,
// leaves one the target took further, and copies nothing when a run
// changed in both.
func TestCopy(t *testing.T) {
	ctx := context.Background()
	open := func(name string) *sqlstore.DB {
		db, err := Open(ctx, filepath.Join(t.TempDir(), name), Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	exec := func(db *sqlstore.DB, q string, args ...any) {
		t.Helper()
		if _, err := db.SQL().ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	count := func(db *sqlstore.DB, q string, args ...any) int {
		t.Helper()
		var n int
		if err := db.SQL().QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	run := func(db *sqlstore.DB, id, status string, at int) {
		exec(db, `INSERT OR IGNORE INTO specs(hash, body) VALUES ('h', 'spec')`)
		exec(db, `INSERT INTO runs(id, agent, status, input, spec_hash, created_at, updated_at) VALUES (?, 'a', ?, 'in', 'h', 1, ?)`, id, status, at)
		exec(db, `INSERT INTO calls(run_id, call_id, seq, step, tool, args, status, created_at, updated_at) VALUES (?, 'call_1', 1, 1, 't', '{}', 'pending', 1, 1)`, id)
		exec(db, `INSERT INTO events(run_id, type, data, at) VALUES (?, 'tool-call', '{}', 1)`, id)
	}
	decide := func(db *sqlstore.DB, id, by string, at int) {
		exec(db, `UPDATE runs SET status = 'completed', updated_at = ? WHERE id = ?`, at, id)
		exec(db, `UPDATE calls SET status = 'succeeded', updated_at = ? WHERE run_id = ?`, at, id)
		exec(db, `INSERT INTO decisions(run_id, call_id, action, by_name, os_user, at) VALUES (?, 'call_1', 'approve', ?, 'u', ?)`, id, by, at)
		exec(db, `INSERT INTO events(run_id, type, data, at) VALUES (?, 'finish', '{}', ?)`, id, at)
	}

	src, dst := open("src.db"), open("dst.db")
	// The target's own run uses decision and event id 1 too.
	run(dst, "OWN", "suspended", 1)
	decide(dst, "OWN", "carol", 2)
	run(src, "A", "suspended", 1)
	decide(src, "A", "alice", 2)
	run(src, "B", "suspended", 1)
	run(src, "C", "suspended", 1)
	if _, err := sqlstore.Copy(ctx, src, dst); err != nil {
		t.Fatal(err)
	}
	if n := count(dst, `SELECT count(*) FROM decisions WHERE run_id = 'A' AND by_name = 'alice'`); n != 1 {
		t.Errorf("A's decision in the target: %d, want 1 (its id was taken there)", n)
	}
	if n := count(dst, `SELECT count(*) FROM events`); n != 2+2+1+1 {
		t.Errorf("events in the target: %d, want 6", n)
	}

	// B goes on in the source, C in the target.
	decide(src, "B", "bob", 5)
	decide(dst, "C", "carol", 5)
	out, err := sqlstore.Copy(ctx, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if out[1].Updated != 1 || out[1].Ahead != 1 || out[2].Updated != 1 || out[3].Copied != 1 {
		t.Errorf("second copy: %+v", out)
	}
	if n := count(dst, `SELECT count(*) FROM calls WHERE run_id = 'B' AND status = 'succeeded'`); n != 1 {
		t.Error("B's call is not brought up to date")
	}
	if n := count(dst, `SELECT count(*) FROM decisions WHERE run_id = 'C' AND by_name = 'carol'`); n != 1 {
		t.Error("C's decision in the target is gone")
	}

	// C decided in the source too: nothing is copied, not even D.
	decide(src, "C", "dave", 6)
	run(src, "D", "suspended", 7)
	_, err = sqlstore.Copy(ctx, src, dst)
	var moved *sqlstore.MovedError
	if !errors.As(err, &moved) || !errors.Is(err, store.ErrConflict) || len(moved.Runs) != 1 || moved.Runs[0].RunID != "C" {
		t.Fatalf("both changed: %v", err)
	}
	if n := count(dst, `SELECT count(*) FROM runs WHERE id = 'D'`); n != 0 {
		t.Error("a refused copy wrote D")
	}
}

// TestCopyTokens: Copy copies the tokens the target lacks, carries a
// revocation over, and keeps one the target made.
func TestCopyTokens(t *testing.T) {
	ctx := context.Background()
	open := func(name string) *sqlstore.DB {
		db, err := Open(ctx, filepath.Join(t.TempDir(), name), Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	src, dst := open("src.db"), open("dst.db")
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	mk := func(db *sqlstore.DB, secret string) *store.Token {
		tok := &store.Token{User: secret, Hash: sha256.Sum256([]byte(secret)), CreatedBy: "root", CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
		if err := db.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		return tok
	}
	a, b, c := mk(src, "a"), mk(src, "b"), mk(src, "c")
	if _, err := sqlstore.Copy(ctx, src, dst); err != nil {
		t.Fatal(err)
	}
	mk(dst, "d")
	if _, err := src.RevokeToken(ctx, b.ID, at); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.RevokeToken(ctx, c.ID, at); err != nil {
		t.Fatal(err)
	}
	copied, err := sqlstore.Copy(ctx, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if got := copied[len(copied)-1]; got != (sqlstore.Copied{Table: "tokens", Source: 3, Updated: 1, Present: 2, Target: 4}) {
		t.Errorf("tokens copied: %+v", got)
	}
	for _, tok := range []*store.Token{a, b, c} {
		got, err := dst.TokenByHash(ctx, tok.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if revoked := !got.RevokedAt.IsZero(); revoked != (tok != a) {
			t.Errorf("token %s in the target: revoked %v", tok.User, revoked)
		}
	}
}

// TestCopyChain: a decision Copy brings into a target whose audit chain
// has begun is chained there, so that the target's verify does not take
// it for one added behind agentctl's back.
func TestCopyChain(t *testing.T) {
	ctx := context.Background()
	open := func(name string) *sqlstore.DB { return openTemp(t, name) }
	exec := func(db *sqlstore.DB, q string, args ...any) {
		t.Helper()
		execOn(t, db, q, args...)
	}
	run := func(db *sqlstore.DB, id string) {
		exec(db, `INSERT OR IGNORE INTO specs(hash, body) VALUES ('h', 'spec')`)
		exec(db, `INSERT INTO runs(id, agent, status, input, spec_hash, created_at, updated_at) VALUES (?, 'a', 'suspended', 'in', 'h', 1, 1)`, id)
		exec(db, `INSERT INTO calls(run_id, call_id, seq, step, tool, args, status, kind, created_at, updated_at) VALUES (?, 'call_1', 1, 1, 't', '{}', 'pending', 'approval', 1, 1)`, id)
	}
	src, dst := open("src.db"), open("dst.db")
	run(dst, "OWN")
	if _, err := dst.Decide(ctx, []*store.Decision{{RunID: "OWN", CallID: "call_1", Action: store.Approve, By: "carol"}}, store.Lease{}); err != nil {
		t.Fatal(err)
	}
	// The source's decision comes after the target's chain began.
	run(src, "A")
	later := time.Now().Add(time.Minute).UnixMilli()
	exec(src, `INSERT INTO decisions(run_id, call_id, action, by_name, os_user, reason, at) VALUES ('A', 'call_1', 'approve', 'alice', 'u', 'ok', ?)`, later)
	// And one made before it began.
	run(src, "B")
	exec(src, `INSERT INTO decisions(run_id, call_id, action, by_name, os_user, reason, at) VALUES ('B', 'call_1', 'approve', 'bob', 'u', 'ok', 1)`)
	if _, err := sqlstore.Copy(ctx, src, dst); err != nil {
		t.Fatal(err)
	}
	rep, err := dst.VerifyChain(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Intact() || rep.Records != 3 || rep.Unchained != 0 {
		t.Fatalf("the target's chain after a copy: %d records, %d unchained, problem %v, mismatch %v", rep.Records, rep.Unchained, rep.Problem, rep.Mismatch)
	}
}

// openTemp opens a new database named name in a temporary directory.
func openTemp(t *testing.T, name string) *sqlstore.DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), name), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// execOn runs statement q on db, failing the test on an error.
func execOn(t *testing.T, db *sqlstore.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.SQL().ExecContext(context.Background(), q, args...); err != nil {
		t.Fatal(err)
	}
}
