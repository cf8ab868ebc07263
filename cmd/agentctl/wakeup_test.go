package main

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/postgres"
)

// execTimer is a Store that notes when a call starts executing: by its
// own move, or in the claim of its run.
type execTimer struct {
	store.Store
	at     chan time.Time
	claims atomic.Int64 // calls started in their run's claim
}

func (s *execTimer) MoveCall(ctx context.Context, l store.Lease, m store.Move, ev ...store.Event) error {
	err := s.Store.MoveCall(ctx, l, m, ev...)
	if err == nil && m.To == store.CallExecuting {
		s.started()
	}
	return err
}

func (s *execTimer) ClaimStart(ctx context.Context, l store.Lease, agent string, plain []store.Plain) (*store.Claimed, error) {
	w, err := s.Store.ClaimStart(ctx, l, agent, plain)
	if err == nil && w != nil && w.Started != "" {
		s.claims.Add(1)
		s.started()
	}
	return w, err
}

func (s *execTimer) started() {
	select {
	case s.at <- time.Now():
	default:
	}
}

// BenchmarkWorkerWakeup (PostgreSQL): a worker waiting on LISTEN, woken
// by the NOTIFY a detached approval sends, from its wake-up to the start
// of the approved call's execution (the claim, the read of the run's
// calls and the ledger transition: one statement, ClaimStart);
// against a bare LISTEN/NOTIFY round trip between two connections,
// alternately. It reports medians and 99th percentiles.
func BenchmarkWorkerWakeup(b *testing.B) {
	b.Cleanup(stopPG)
	ctx := context.Background()
	dsn, err := newPGDatabase("wakeup")
	if err != nil {
		b.Skip("postgres:", err)
	}
	open := func() *postgres.DB {
		db, err := postgres.Open(ctx, dsn, postgres.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return db
	}
	db, wdb := open(), open()
	defer db.Close()
	defer wdb.Close()
	rec := &execTimer{Store: wdb, at: make(chan time.Time, 1)}
	worker := engine.New(rec, engine.Config{})
	listen := func(channel string) *postgres.Listener {
		l, err := postgres.Listen(ctx, dsn, channel)
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
	wl, bare := listen(postgres.ChannelWork), listen("agentctl_bench")
	defer wl.Close()
	defer bare.Close()

	// The worker: wake, note when, work until nothing is left.
	woke := make(chan time.Time, 1)
	finished := make(chan struct{}, 1)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for wctx.Err() == nil {
			p, err := wl.Wait(wctx, time.Second)
			if err != nil || p == "" {
				continue
			}
			woke <- time.Now()
			for {
				_, ok, err := worker.Work(wctx, "")
				if err != nil || !ok {
					break
				}
			}
			finished <- struct{}{}
		}
	}()
	defer func() { stop(); <-done }()

	e, g := engine.New(db, engine.Config{}), perfGraph()
	var wake, rt []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v, err := e.Start(ctx, g, engine.StartOptions{Agent: "oncall", Input: "nginx is down"})
		if err != nil || v.Status != store.Suspended {
			b.Fatalf("%v %v", v, err)
		}
		if _, err := e.Decide(ctx, engine.Decision{RunID: v.RunID, Action: store.Approve, OSUser: "bench", Detach: true}); err != nil {
			b.Fatal(err)
		}
		t0 := <-woke
		t1 := <-rec.at
		<-finished
		wake = append(wake, t1.Sub(t0))

		s := time.Now()
		if _, err := db.SQL().ExecContext(ctx, `SELECT pg_notify('agentctl_bench', 'x')`); err != nil {
			b.Fatal(err)
		}
		if p, err := bare.Wait(ctx, 5*time.Second); err != nil || p != "x" {
			b.Fatalf("bare round trip: %q %v", p, err)
		}
		rt = append(rt, time.Since(s))
	}
	b.StopTimer()
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	b.ReportMetric(us(quantile(wake, 0.5)), "wake-us")
	b.ReportMetric(us(quantile(wake, 0.99)), "wake-p99-us")
	b.ReportMetric(us(quantile(rt, 0.5)), "notify-us")
	b.ReportMetric(us(quantile(rt, 0.99)), "notify-p99-us")
	b.ReportMetric(float64(quantile(wake, 0.5))/float64(quantile(rt, 0.5)), "ratio")
	b.ReportMetric(float64(rec.claims.Load())/float64(b.N), "started-in-claim")
}

func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
