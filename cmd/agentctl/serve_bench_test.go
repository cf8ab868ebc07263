package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlite"
	"github.com/agentctl/agentctl/server"
	"github.com/agentctl/agentctl/token"
)

// benchServer serves agentctl's API over loopback HTTP on the SQLite
// database at path, as agentctl serve does (its request log formatted
// and discarded), with alice, a token user, in every role; it returns
// the base URL, alice's token and the store.
func benchServer(b *testing.B, path string) (string, string, *sqlite.DB) {
	b.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	e := engine.New(db, engine.Config{Models: model.Default()})
	secret, hash := token.New()
	now := time.Now()
	if err := db.CreateToken(ctx, &store.Token{ID: token.ID(hash), User: "alice", Hash: hash, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		b.Fatal(err)
	}
	alice := []string{"alice"}
	cfg := &server.Config{Readers: alice, Runners: alice, Approvers: alice,
		RateLimit: server.RateConfig{PerSecond: 1e6, Burst: 1 << 20}}
	srv, err := server.New(server.Options{Store: db, Engine: e, Config: cfg, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	b.Cleanup(func() {
		hs.Close()
		srv.Stop()
		srv.Wait()
		e.Close()
		db.Close()
	})
	return hs.URL, secret, db
}

// startSuspended starts n runs of perfSpec's agent, each suspended for
// an approval, and returns their ids.
func startSuspended(b *testing.B, db *sqlite.DB, n int) []string {
	b.Helper()
	e, g := engine.New(db, engine.Config{}), perfGraph()
	defer e.Close()
	ids := make([]string, n)
	for i := range ids {
		v, err := e.Start(context.Background(), g, engine.StartOptions{Agent: "oncall", Input: "nginx is down"})
		if err != nil || v.Status != store.Suspended {
			b.Fatalf("start: %v", err)
		}
		ids[i] = v.RunID
	}
	return ids
}

// cloneRun copies run id's row and its calls n times, whole (every
// column), under new ids: n more runs waiting as it waits.
func cloneRun(raw *sql.DB, id string, n int) error {
	cols := func(table string, fresh map[string]string) (string, string, error) {
		rows, err := raw.Query(`SELECT name FROM pragma_table_info(?)`, table)
		if err != nil {
			return "", "", err
		}
		defer rows.Close()
		var names, exprs []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				return "", "", err
			}
			e, ok := fresh[c]
			if !ok {
				e = "t." + c
			}
			names, exprs = append(names, c), append(exprs, e)
		}
		return strings.Join(names, ", "), strings.Join(exprs, ", "), rows.Err()
	}
	newID := "printf('00G%023d', n.i)"
	rc, re, err := cols("runs", map[string]string{"id": newID, "root_id": newID})
	if err != nil {
		return err
	}
	cc, ce, err := cols("calls", map[string]string{"run_id": newID})
	if err != nil {
		return err
	}
	_, err = raw.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO runs (`+rc+`) SELECT `+re+` FROM n, (SELECT * FROM runs WHERE id = ?) t;
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO calls (`+cc+`) SELECT `+ce+` FROM n, (SELECT * FROM calls WHERE run_id = ?) t`, n, id, n, id)
	return err
}

// post sends a JSON body with a bearer token and returns the status,
// the body read whole.
func post(b *testing.B, c *http.Client, url, tok string, body []byte) (int, []byte) {
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return resp.StatusCode, data
}

// bareHandler is the floor of an HTTP decision: it decodes the same
// body and does one indexed write (an UPDATE by primary key) to the
// same database, with the same pragmas, then answers a small JSON.
func bareHandler(raw *sql.DB) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /bare/{id}", func(w http.ResponseWriter, r *http.Request) {
		var req api.DecisionRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if _, err := raw.Exec(`UPDATE runs SET updated_at = ? WHERE id = ?`, time.Now().UnixMilli(), r.PathValue("id")); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok": true}`))
	})
	return mux
}

// BenchmarkHTTPApprove times an approval's round trip over HTTP through
// agentctl serve's handler (POST /v1/runs/{id}/approve with a bearer
// token: authenticated, the policy checked, the decision committed, the
// approved tool run, the model's next turn, the run completed, then the
// answer) against a bare net/http handler that decodes the same body and
// does one indexed write to the same database, alternately, each over a
// keep-alive connection on loopback. The detached round trip
// (?detach: the decision committed, the answer at once) is timed too.
func BenchmarkHTTPApprove(b *testing.B) {
	path := filepath.Join(b.TempDir(), "a.db")
	url, tok, db := benchServer(b, path)
	ids := startSuspended(b, db, 2*b.N)
	raw, err := floorDB(path)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	bare := httptest.NewServer(bareHandler(raw))
	defer bare.Close()
	c := &http.Client{}
	body := []byte(`{"reason": "on call"}`)
	detached := []byte(`{"reason": "on call", "detach": true}`)
	var ta, td, tb time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if code, out := post(b, c, url+"/v1/runs/"+ids[2*i]+"/approve", tok, body); code != 200 || !bytes.Contains(out, []byte(`"status": "completed"`)) {
			b.Fatalf("approve: %d %s", code, out)
		}
		t1 := time.Now()
		if code, out := post(b, c, bare.URL+"/bare/"+ids[2*i], "", body); code != 200 {
			b.Fatalf("bare: %d %s", code, out)
		}
		t2 := time.Now()
		if code, out := post(b, c, url+"/v1/runs/"+ids[2*i+1]+"/approve", tok, detached); code/100 != 2 {
			b.Fatalf("approve, detached: %d %s", code, out)
		}
		ta, tb, td = ta+t1.Sub(t0), tb+t2.Sub(t1), td+time.Since(t2)
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(per(ta), "approve-us")
	b.ReportMetric(per(td), "detached-us")
	b.ReportMetric(per(tb), "bare-us")
	b.ReportMetric(float64(ta)/float64(tb), "ratio")
	b.ReportMetric(float64(td)/float64(tb), "ratio-detached")
}

// BenchmarkHTTPApprovals times GET /v1/approvals, the inbox's first
// page (and a page from its middle), with 10,000 calls waiting for
// approval: p50 and p99 over HTTP.
func BenchmarkHTTPApprovals(b *testing.B) {
	path := filepath.Join(b.TempDir(), "a.db")
	url, tok, db := benchServer(b, path)
	id := startSuspended(b, db, 1)[0]
	if err := cloneRun(db.SQL(), id, 9_999); err != nil {
		b.Fatal(err)
	}
	c := &http.Client{}
	get := func(q string) []byte {
		req, _ := http.NewRequest("GET", url+"/v1/approvals"+q, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			b.Fatalf("approvals: %d %s", resp.StatusCode, data)
		}
		return data
	}
	// The cursor of a page from the middle: 50 pages of 100 in.
	var page api.List[api.Approval]
	q := "?limit=100"
	for range 50 {
		if err := json.Unmarshal(get(q), &page); err != nil || len(page.Items) != 100 || page.Next == "" {
			b.Fatalf("page: %d items, next %q, %v", len(page.Items), page.Next, err)
		}
		q = "?limit=100&cursor=" + page.Next
	}
	middle := q
	var first, mid []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		get("")
		t1 := time.Now()
		get(middle)
		first, mid = append(first, t1.Sub(t0)), append(mid, time.Since(t1))
	}
	b.StopTimer()
	b.ReportMetric(float64(quantile(first, 0.5).Microseconds()), "p50-us")
	b.ReportMetric(float64(quantile(first, 0.99).Microseconds()), "p99-us")
	b.ReportMetric(float64(quantile(mid, 0.5).Microseconds()), "middle-p50-us")
	b.ReportMetric(float64(quantile(mid, 0.99).Microseconds()), "middle-p99-us")
}
