package sqlstore

import (
	"database/sql"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/agentctl/agentctl/engine/store"
)

// Every code decodes to the type it encodes, and no name is a code: a
// type stored by its name, before the codes or without one, reads as it
// was stored.
func TestEventCodes(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range eventCodes {
		if len(c[1]) != 1 || len(c[0]) < 2 || seen[c[1]] {
			t.Errorf("code %q for %q: want one letter, unique, for a longer name", c[1], c[0])
		}
		seen[c[1]] = true
		if got := encodeEventType(store.EventType(c[0])); got != c[1] {
			t.Errorf("encode %q = %q, want %q", c[0], got, c[1])
		}
		if got := decodeEventType(c[1]); got != store.EventType(c[0]) {
			t.Errorf("decode %q = %q, want %q", c[1], got, c[0])
		}
		if got := decodeEventType(c[0]); got != store.EventType(c[0]) {
			t.Errorf("decode the name %q = %q, want it as stored", c[0], got)
		}
	}
	for _, s := range []string{"before", "x", "", "tool-call-approval-2"} {
		if got := encodeEventType(store.EventType(s)); got != s {
			t.Errorf("encode %q = %q, want it as it is", s, got)
		}
		if got := decodeEventType(s); string(got) != s {
			t.Errorf("decode %q = %q, want it as it is", s, got)
		}
	}
}

// The view events, made by a migration, names every code's type and
// passes a name through: a code added without a migration that replaces
// the view fails here.
func TestEventsView(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE event_rows (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL, at INTEGER NOT NULL);
		CREATE VIEW events AS SELECT id, run_id, ` + EventTypeName + ` AS type, data, at FROM event_rows`); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"tool-call": "tool-call", "later-type": "later-type"}
	for _, c := range eventCodes {
		want[c[1]] = c[0]
	}
	for stored := range want {
		if _, err := db.Exec(`INSERT INTO event_rows(run_id, type, data, at) VALUES ('r', ?, '{}', 0)`, stored); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.Query(`SELECT r.type, v.type FROM event_rows r JOIN events v ON v.id = r.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var stored, named string
		if err := rows.Scan(&stored, &named); err != nil {
			t.Fatal(err)
		}
		if named != want[stored] {
			t.Errorf("the view events shows %q stored as %q, want %q", named, stored, want[stored])
		}
		n++
	}
	if err := rows.Err(); err != nil || n != len(want) {
		t.Fatalf("events: %d rows (%v), want %d", n, err, len(want))
	}
}
