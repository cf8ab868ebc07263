package server

import (
	"context"
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/internal/duration"
)

// PruneConfig is prune: the retention the server runs on a schedule, as
// agentctl prune --completed-before AGE [--keep-audit] would.
type PruneConfig struct {
	// CompletedBefore is how long after they ended trees of runs are
	// kept: a duration such as 30d. Required.
	CompletedBefore string `yaml:"completedBefore"`
	// Every is how often the server prunes, the first time once it
	// serves: a duration of 1m or more (default 24h).
	Every string `yaml:"every"`
	// KeepAudit keeps a tombstone of each pruned run with its decisions
	// (agentctl audit lists them).
	KeepAudit bool `yaml:"keepAudit"`

	age, every time.Duration // parsed
}

// DefaultPruneEvery is how often the server prunes unless prune.every
// says otherwise.
const DefaultPruneEvery = 24 * time.Hour

// minPruneEvery is the shortest prune.every: a prune looks at every
// ended run, not a thing to do in a loop.
const minPruneEvery = time.Minute

// checkPrune validates prune: and parses its durations.
func (c *Config) checkPrune(p *checker, root *yaml.Node) {
	pc := c.Prune
	if pc == nil {
		return
	}
	n := find(root, "prune")
	if pc.CompletedBefore == "" {
		p.add(n, "prune: completedBefore is required: how long after they ended runs are kept, such as 30d")
	} else if d, err := duration.Parse(pc.CompletedBefore); err != nil || d <= 0 {
		p.add(find(n, "completedBefore"), "prune.completedBefore %q: want a duration above 0, such as 30d", pc.CompletedBefore)
	} else {
		pc.age = d
	}
	pc.every = DefaultPruneEvery
	if pc.Every != "" {
		d, err := duration.Parse(pc.Every)
		if err != nil || d < minPruneEvery {
			p.add(find(n, "every"), "prune.every %q: want a duration of 1m or more, such as 24h", pc.Every)
		}
		pc.every = d
	}
}

// startPrune prunes as the configuration says, once at once and then
// every prune.every, until the returned function is called; that
// cancels a prune under way (its committed batches stay pruned) and
// waits for it. A failed prune is logged and tried again at the next
// time: it never stops the server.
func (s *Server) startPrune(ctx context.Context) (stop func()) {
	pc := s.cfg.Prune
	if pc == nil || pc.age <= 0 {
		return func() {}
	}
	p, ok := s.store.(store.Pruner)
	if !ok {
		s.log.Error("prune: this build's store does not prune; prune: in the configuration is ignored")
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(pc.every)
		defer t.Stop()
		for {
			s.pruneOnce(ctx, p, pc)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// pruneOnce runs one prune and logs what it did as one JSON line.
func (s *Server) pruneOnce(ctx context.Context, p store.Pruner, pc *PruneConfig) {
	start := time.Now()
	before := s.now().Add(-pc.age)
	var c store.PruneCounts
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("prune panicked: %v", r)
			}
		}()
		c, err = p.Prune(ctx, store.PruneOptions{Before: before, KeepAudit: pc.KeepAudit})
	}()
	attrs := []any{"before", before.UTC().Format(time.RFC3339), "runs", c.Runs, "calls", c.Calls, "events", c.Events,
		"decisions", c.Decisions, "notifications", c.Notifications, "specs", c.Specs, "tombstones", c.Tombstones,
		"batches", c.Batches, "duration_ms", float64(time.Since(start).Microseconds()) / 1000}
	switch {
	case err != nil && ctx.Err() != nil:
		s.log.Info("prune stopped with the server", attrs...)
	case err != nil:
		s.log.Error("prune failed", append(attrs, "err", err.Error())...)
	default:
		s.log.Info("prune", attrs...)
	}
}
