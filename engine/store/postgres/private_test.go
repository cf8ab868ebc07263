package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/postgres"
)

// TestCredentialsMove: a database of the schema before credentials had a
// schema of their own, holding a token, upgrades: the token moves to
// agentctl_private, with its row, and still authenticates.
func TestCredentialsMove(t *testing.T) {
	ctx := context.Background()
	dsn, err := server.NewDB(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	db := oldRun(t, dsn)
	tok := &store.Token{ID: "0123456789ab", User: "alice", Hash: [32]byte{1, 2, 3}, CreatedAt: time.Now(), CreatedBy: "root",
		ExpiresAt: time.Now().Add(time.Hour)}
	if err := db.CreateToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	rewind(t, db, privateSchema)
	var schema string
	if err := db.SQL().QueryRowContext(ctx, `SELECT table_schema FROM information_schema.tables WHERE table_name = 'tokens'`).Scan(&schema); err != nil || schema != "public" {
		t.Fatalf("before the upgrade, tokens is in %q (%v), want public", schema, err)
	}
	db.Close()
	db, err = postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.SQL().QueryRowContext(ctx, `SELECT table_schema FROM information_schema.tables WHERE table_name = 'tokens'`).Scan(&schema); err != nil || schema != postgres.PrivateSchema {
		t.Fatalf("after the upgrade, tokens is in %q (%v), want %s", schema, err, postgres.PrivateSchema)
	}
	got, err := db.TokenByHash(ctx, tok.Hash)
	if err != nil || got.User != "alice" {
		t.Fatalf("the token after the upgrade: %+v, %v", got, err)
	}
}

// TestFreshOpenRace: processes that open a new, empty database at once
// all succeed; one creates the schema, under the lock, and the others
// find it (two sessions creating a table at once would race in the
// catalog: type "agentctl_schema" already exists).
func TestFreshOpenRace(t *testing.T) {
	ctx := context.Background()
	for round := range 5 {
		dsn, err := server.NewDB(ctx, fmt.Sprintf("%s_%d", t.Name(), round))
		if err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				db, err := postgres.Open(ctx, dsn, postgres.Options{})
				if err == nil {
					db.Close()
				}
				errs <- err
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}
