package sqlstore

import "strings"

// TimingsMigration adds when each call started and finished executing
// (milliseconds since the epoch; NULL when it never ran, or when its
// end is unknown: interrupted), and the tombstones agentctl prune
// --keep-audit leaves of the runs it deletes: a run's id, agent,
// status, times and starter, with its decisions as a JSON array. An
// index over ended runs by age serves prune's batches. idType is the
// backend's id column type, intType its 64-bit integer.
func TimingsMigration(idType, intType string) string {
	return strings.NewReplacer("ID_TYPE", idType, "INT_TYPE", intType).Replace(`ALTER TABLE calls ADD COLUMN started_at INT_TYPE;
	ALTER TABLE calls ADD COLUMN finished_at INT_TYPE;
	CREATE TABLE tombstones (
		id         ID_TYPE PRIMARY KEY,
		root_id    ID_TYPE NOT NULL,
		agent      TEXT NOT NULL,
		status     TEXT NOT NULL,
		started_by TEXT NOT NULL DEFAULT '',
		created_at INT_TYPE NOT NULL,
		updated_at INT_TYPE NOT NULL,
		pruned_at  INT_TYPE NOT NULL,
		decisions  TEXT NOT NULL DEFAULT '[]'
	);
	CREATE INDEX tombstones_updated ON tombstones(updated_at);
	CREATE INDEX runs_ended ON runs(updated_at) WHERE status IN ('completed', 'failed');`)
}
