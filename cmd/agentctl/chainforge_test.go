package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentctl/agentctl/engine/store/chain"
	"github.com/agentctl/agentctl/engine/store/postgres"
	"github.com/agentctl/agentctl/internal/jcs"
)

// chainforge is an attacker with write access to the database and
// agentctl's source: it changes the reason of the last decision with
// ACTION, in the decisions table and in its chained record, and rewrites
// every link from there so that the chain is consistent again; with
// -checkpoints it also deletes the signed heads stored in the database.
//
//	chainforge [-checkpoints] FILE|URL ACTION REASON
func chainforge(ts *testscript.TestScript, neg bool, args []string) {
	drop := len(args) == 4 && args[0] == "-checkpoints"
	if drop {
		args = args[1:]
	}
	if neg || len(args) != 3 {
		ts.Fatalf("usage: chainforge [-checkpoints] FILE|URL ACTION REASON")
	}
	db, pg := scriptDB(ts, args[0])
	defer db.Close()
	q := func(s string) string { // ? to $n on PostgreSQL
		for n := 1; pg && strings.Contains(s, "?"); n++ {
			s = strings.Replace(s, "?", fmt.Sprintf("$%d", n), 1)
		}
		return s
	}
	var id int64
	ts.Check(db.QueryRow(q(`SELECT max(id) FROM decisions WHERE action = ?`), args[1]).Scan(&id))
	_, err := db.Exec(q(`UPDATE decisions SET reason = ? WHERE id = ?`), args[2], id)
	ts.Check(err)
	if drop {
		_, err = db.Exec(`DELETE FROM audit_checkpoints`)
		ts.Check(err)
	}
	rows, err := db.Query(`SELECT seq, prev, decision, record FROM audit_chain ORDER BY seq`)
	ts.Check(err)
	type link struct {
		seq      int64
		prev     string
		decision sql.NullInt64
		record   sql.NullString
	}
	var links []link
	for rows.Next() {
		var l link
		ts.Check(rows.Scan(&l.seq, &l.prev, &l.decision, &l.record))
		links = append(links, l)
	}
	ts.Check(rows.Err())
	rows.Close()
	prev, forged := chain.Genesis, false
	for _, l := range links {
		rec := l.record.String
		if l.decision.Int64 == id && l.record.Valid {
			var m map[string]any
			ts.Check(json.Unmarshal([]byte(rec), &m))
			m["reason"] = args[2]
			b, err := jcs.Marshal(m)
			ts.Check(err)
			rec, forged = string(b), true
		}
		if !forged {
			prev = linkHash(ts, db, q, l.seq)
			continue
		}
		digest := chain.Digest([]byte(rec))
		if !l.record.Valid {
			ts.Check(db.QueryRow(q(`SELECT digest FROM audit_chain WHERE seq = ?`), l.seq).Scan(&digest))
		}
		hash := chain.LinkHash(l.seq, prev, digest)
		var r any = rec
		if !l.record.Valid {
			r = nil
		}
		_, err := db.Exec(q(`UPDATE audit_chain SET prev = ?, digest = ?, hash = ?, record = ? WHERE seq = ?`), prev, digest, hash, r, l.seq)
		ts.Check(err)
		prev = hash
	}
	if !forged {
		ts.Fatalf("chainforge: decision %d is not in the chain", id)
	}
}

// scriptDB opens a script's database: a PostgreSQL URL, or a SQLite
// file in the script's directory; pg says which.
func scriptDB(ts *testscript.TestScript, dsn string) (db *sql.DB, pg bool) {
	driver, pg := "sqlite", postgres.IsURL(dsn)
	if pg {
		driver = "pgx"
	} else {
		dsn = ts.MkAbs(dsn)
	}
	db, err := sql.Open(driver, dsn)
	ts.Check(err)
	return db, pg
}

// linkHash reads the stored hash of the link at seq.
func linkHash(ts *testscript.TestScript, db *sql.DB, q func(string) string, seq int64) string {
	var h string
	ts.Check(db.QueryRow(q(`SELECT hash FROM audit_chain WHERE seq = ?`), seq).Scan(&h))
	return h
}
