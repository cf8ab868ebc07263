package sqlstore

import "github.com/agentctl/agentctl/engine/store"

// eventCodes are the one-letter codes the events table stores in its
// type column for the engine's event types, from schema 13 (SQLite) and
// 10 (PostgreSQL) on: an event is stored six or more times per run, and
// its type's name was, after its run's id, its largest column. A type
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

// EventLogView creates the view event_log: the events table with each
// type by its name, whether stored as a code or, before the codes, by
// name. It is what a reader with SQL alone (an auditor's SELECT) queries
// for events. It is part of a migration: a code added later needs a
// migration that replaces the view (TestEventLogView holds the two
// together).
const EventLogView = `CREATE VIEW event_log AS SELECT id, run_id, CASE type
		WHEN 't' THEN 'text-delta' WHEN 'c' THEN 'tool-call' WHEN 'a' THEN 'tool-call-approval'
		WHEN 's' THEN 'tool-call-suspended' WHEN 'r' THEN 'tool-result' WHEN 'p' THEN 'step-finish'
		WHEN 'f' THEN 'finish' WHEN 'e' THEN 'error' WHEN 'l' THEN 'stalled' WHEN 'd' THEN 'decision'
		ELSE type END AS type, data, at FROM events`
