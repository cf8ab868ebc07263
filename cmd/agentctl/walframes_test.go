package main

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store/sqlite"
)

// walFrameRuns is how many runs BenchmarkWALFrames counts, after as many
// again to give the B-trees their depth.
const walFrameRuns = 200

// BenchmarkWALFrames counts the WAL frames (pages written, each two
// pwrite calls) that runs of perfSpec to suspension commit, by the
// B-tree each page belongs to, and those of the storage floor's
// transactions: what the in-process and throughput ratios are made of.
// A reader holds its snapshot from before the counted runs, so that no
// checkpoint resets the WAL under them; dbstat names each page's B-tree
// afterwards. It reports frames/run, floor-frames/run, commits/run and
// one frames/run figure per B-tree, named "frames:NAME/run".
func BenchmarkWALFrames(b *testing.B) {
	ctx := context.Background()
	sizes, _, err := txProfile()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		engineDB := filepath.Join(dir, "engine.db")
		g := perfGraph()
		byTree, commits, err := countFrames(ctx, engineDB, func(n int) error {
			db, err := sqlite.Open(ctx, engineDB, sqlite.Options{})
			if err != nil {
				return err
			}
			defer db.Close()
			e := engine.New(db, engine.Config{})
			for range n {
				if _, err := e.Start(ctx, g, engine.StartOptions{Agent: "oncall", Input: "nginx is down"}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		floorPath := filepath.Join(dir, "floor.db")
		body := make([]byte, 64<<10)
		floorByTree, _, err := countFrames(ctx, floorPath, func(n int) error {
			db, err := floorDB(floorPath)
			if err != nil {
				return err
			}
			defer db.Close()
			for range n {
				if err := floorRun(db, sizes, body); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		total, floor := 0, 0
		for name, n := range byTree {
			total += n
			b.ReportMetric(float64(n)/walFrameRuns, "frames:"+name+"/run")
		}
		for _, n := range floorByTree {
			floor += n
		}
		if total == 0 || floor == 0 {
			b.Fatalf("no WAL frames counted (engine %d, floor %d)", total, floor)
		}
		b.ReportMetric(float64(total)/walFrameRuns, "frames/run")
		b.ReportMetric(float64(floor)/walFrameRuns, "floor-frames/run")
		b.ReportMetric(float64(commits)/walFrameRuns, "commits/run")
	}
}

// countFrames runs work(walFrameRuns) on the database at path after a
// warm-up of work(walFrameRuns), and returns the frames the counted
// runs wrote to the WAL, by the name of the B-tree (table or index) each
// frame's page belongs to ("freelist" for pages that are no longer in
// one), and how many of the frames were commits.
func countFrames(ctx context.Context, path string, work func(n int) error) (map[string]int, int, error) {
	if err := work(walFrameRuns); err != nil {
		return nil, 0, err
	}
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, 0, err
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	if _, err := raw.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return nil, 0, err
	}
	// The snapshot held from here keeps every later frame in the WAL:
	// a checkpoint may not write a page to the file while it is held.
	conn, err := raw.Conn(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, err
	}
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
		tx.Rollback()
		return nil, 0, err
	}
	if err := work(walFrameRuns); err != nil {
		tx.Rollback()
		return nil, 0, err
	}
	wal, err := os.ReadFile(path + "-wal")
	tx.Rollback()
	if err != nil {
		return nil, 0, err
	}
	pages, commits, err := walPages(wal)
	if err != nil {
		return nil, 0, err
	}
	names, err := pageOwners(ctx, conn)
	if err != nil {
		return nil, 0, err
	}
	byTree := map[string]int{}
	for _, p := range pages {
		name, ok := names[p]
		switch {
		case ok:
		case p == 1:
			name = "sqlite_schema" // the file's header page
		default:
			name = "freelist"
		}
		byTree[name]++
	}
	return byTree, commits, nil
}

// walPages returns the page number of each frame of a WAL file (4,096-byte
// pages) and how many frames end a commit.
func walPages(wal []byte) ([]uint32, int, error) {
	const header, frameHeader, pageSize = 32, 24, 4096
	if len(wal) < header {
		return nil, 0, fmt.Errorf("WAL of %d bytes: no header", len(wal))
	}
	if ps := binary.BigEndian.Uint32(wal[8:]); ps != pageSize {
		return nil, 0, fmt.Errorf("WAL page size %d, want %d", ps, pageSize)
	}
	var pages []uint32
	commits := 0
	for off := header; off+frameHeader+pageSize <= len(wal); off += frameHeader + pageSize {
		pages = append(pages, binary.BigEndian.Uint32(wal[off:]))
		if binary.BigEndian.Uint32(wal[off+4:]) != 0 { // the database's size after a commit
			commits++
		}
	}
	return pages, commits, nil
}

// pageOwners maps each page of the database to the B-tree it belongs to.
func pageOwners(ctx context.Context, conn *sql.Conn) (map[uint32]string, error) {
	rows, err := conn.QueryContext(ctx, "SELECT name, pageno FROM dbstat")
	if err != nil {
		return nil, fmt.Errorf("dbstat: %w", err)
	}
	defer rows.Close()
	names := map[uint32]string{}
	for rows.Next() {
		var name string
		var page uint32
		if err := rows.Scan(&name, &page); err != nil {
			return nil, err
		}
		names[page] = name
	}
	return names, rows.Err()
}
