package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) func() store.Store {
		path := filepath.Join(t.TempDir(), "agentctl.db")
		return func() store.Store {
			db, err := Open(context.Background(), path, Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return db
		}
	})
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(ctx, path, Options{})
	if !errors.Is(err, store.ErrNewerSchema) {
		t.Fatalf("opening a newer schema: %v, want ErrNewerSchema", err)
	}
}

func TestReopenKeepsRuns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "dir", "a.db") // directories are created
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &store.Run{ID: "01A", Agent: "a", Status: store.Running, SpecHash: "h", State: []byte("{}")}
	if err := db.CreateRun(ctx, r, []byte("s"), store.Lease{Owner: "p", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Run(ctx, "01A"); err != nil {
		t.Fatal(err)
	}
}

func TestOldEvents(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	storetest.OldEvents(t, func(rows [][2]string) {
		db, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		r := &store.Run{ID: "01OLD", Agent: "a", Status: store.Completed, SpecHash: "h", State: []byte("{}")}
		if err := db.CreateRun(ctx, r, []byte("s"), store.Lease{}); err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			if _, err := db.SQL().Exec(`INSERT INTO events(run_id, type, data, at) VALUES ('01OLD', ?, ?, 0)`, row[0], row[1]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.SQL().Exec(fmt.Sprintf("PRAGMA user_version = %d", len(migrations)-1)); err != nil {
			t.Fatal(err)
		}
	}, func() store.Store {
		db, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}
