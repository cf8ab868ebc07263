package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/postgres"
	"github.com/agentctl/agentctl/engine/store/postgres/pgtest"
	"github.com/agentctl/agentctl/engine/store/storetest"
)

var server *pgtest.Server

func TestMain(m *testing.M) {
	var err error
	server, err = pgtest.Start()
	if err != nil {
		if pgtest.Required() || !errors.Is(err, pgtest.ErrNoServer) {
			fmt.Fprintln(os.Stderr, "postgres:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "skipping the Postgres store tests:", err)
		os.Exit(0)
	}
	code := m.Run()
	server.Stop()
	os.Exit(code)
}

// The store contract, on PostgreSQL.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) func() store.Store {
		dsn, err := server.NewDB(context.Background(), t.Name())
		if err != nil {
			t.Fatal(err)
		}
		return func() store.Store {
			db, err := postgres.Open(context.Background(), dsn, postgres.Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return db
		}
	})
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	dsn, err := server.NewDB(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().ExecContext(ctx, `UPDATE agentctl_schema SET version = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = postgres.Open(ctx, dsn, postgres.Options{})
	if !errors.Is(err, store.ErrNewerSchema) || !strings.Contains(err.Error(), "version 99") || strings.Contains(err.Error(), "password") {
		t.Fatalf("opening a newer schema: %v", err)
	}
}

func TestOldEvents(t *testing.T) {
	ctx := context.Background()
	dsn, err := server.NewDB(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	storetest.OldEvents(t, func(rows [][2]string) {
		db, err := postgres.Open(ctx, dsn, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		r := &store.Run{ID: "01OLD", Agent: "a", Status: store.Completed, SpecHash: "h", State: []byte("{}")}
		if err := db.CreateRun(ctx, r, []byte("s"), store.Lease{}); err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			if _, err := db.SQL().ExecContext(ctx, `INSERT INTO events(run_id, type, data, at) VALUES ('01OLD', $1, $2, 0)`, row[0], row[1]); err != nil {
				t.Fatal(err)
			}
		}
		_, known := db.Schema()
		if _, err := db.SQL().ExecContext(ctx, `UPDATE agentctl_schema SET version = $1`, known-1); err != nil {
			t.Fatal(err)
		}
	}, func() store.Store {
		db, err := postgres.Open(ctx, dsn, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}
