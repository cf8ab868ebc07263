package engine

import (
	"context"
	"log/slog"
)

// adopting ends, each poll, the leases of the holders that are provably
// dead (see adopt), until ctx is done. Where this process cannot prove
// any holder dead (no /proc of its own), it does nothing.
func (p *pool) adopting(ctx context.Context) {
	if !p.judge.able() {
		return
	}
	for ctx.Err() == nil {
		p.adopt(ctx)
		sleep(ctx, p.opts.Poll)
	}
}

// adopt ends the leases of the processes that hold running runs and are
// provably dead, on this host (HolderDead: SIGKILLed, the machine still
// up), and wakes the workers: their runs are claimed now, not when
// their leases run out. It judges each holder once, not each run. Of
// several workers that find one dead holder, each run goes to one
// (store.Lapse, then ClaimStart). A holder on another host is never
// judged dead: its runs wait for its leases to run out.
func (p *pool) adopt(ctx context.Context) {
	owners, err := p.e.store.Holders(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.adoptDown.Failed(slog.LevelWarn, err)
		}
		return
	}
	n := 0
	for _, owner := range owners {
		if owner == p.e.lease.Owner || !p.judge.dead(owner) {
			continue
		}
		k, err := p.e.store.Lapse(ctx, owner)
		if err != nil {
			if ctx.Err() == nil {
				p.adoptDown.Failed(slog.LevelWarn, err)
			}
			return
		}
		if k > 0 {
			p.log.Info("lease holder is dead: its runs are taken over", "holder", owner, "runs", k)
		}
		n += k
	}
	p.adoptDown.Worked()
	for range min(n, p.opts.Concurrency) {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}
