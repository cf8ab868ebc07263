package sqlstore

import "github.com/agentctl/agentctl/engine/store"

// eventCodes are the one-letter codes the table event_rows stores in its
// type column for the engine's event types, from schema 13 (SQLite) and
// 10 (PostgreSQL) on: an event is stored six or more times per run, and
// its type's name was, after its run's id, its largest column. The view
// events, where the table was before, shows every type by name: what
// readers with SQL alone, and an agentctl of an earlier schema still
// running while another upgrades the database, read (and write, through
// a trigger). A type
// without a code (one written before, or one added later without one)
// is stored by its name, which no code is: every name is longer than a
// letter. Never change a code that has shipped; add.
var eventCodes = [...][2]string{
	{"text-delta", "t"},
	{"tool-call", "c"},
	{"tool-call-approval", "a"},
	{"tool-call-suspended", "s"},
	{"tool-result", "r"},
	{"step-finish", "p"},
	{"finish", "f"},
	{"error", "e"},
	{"stalled", "l"},
	{"decision", "d"},
}

// encodeEventType is what the events table stores for t.
func encodeEventType(t store.EventType) string {
	for _, c := range eventCodes {
		if string(t) == c[0] {
			return c[1]
		}
	}
	return string(t)
}

// decodeEventType is the event type the stored s stands for: a code's
// name, or s itself (a name, as stored before codes and for a type with
// none).
func decodeEventType(s string) store.EventType {
	if len(s) == 1 {
		for _, c := range eventCodes {
			if s == c[1] {
				return store.EventType(c[0])
			}
		}
	}
	return store.EventType(s)
}

// EventTypeName is the SQL expression of an event's type by name, from
// event_rows' type column: a code's name, or the name stored. It is part
// of a migration (the view events): a code added later needs a migration
// that replaces the view with a new expression (TestEventsView holds the
// two together). Never change it.
const EventTypeName = `CASE type
		WHEN 't' THEN 'text-delta' WHEN 'c' THEN 'tool-call' WHEN 'a' THEN 'tool-call-approval'
		WHEN 's' THEN 'tool-call-suspended' WHEN 'r' THEN 'tool-result' WHEN 'p' THEN 'step-finish'
		WHEN 'f' THEN 'finish' WHEN 'e' THEN 'error' WHEN 'l' THEN 'stalled' WHEN 'd' THEN 'decision'
		ELSE type END`
