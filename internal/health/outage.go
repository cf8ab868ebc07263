package health

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/agentctl/agentctl/engine/store"
)

// Outage logs a loop's failures to use the database once per outage,
// not once per attempt: while the database cannot be used
// (store.ErrUnavailable, after Classify), the first failure is logged
// and the next are counted, until an attempt works, which is logged as
// the outage's end. Any other failure (a run's own) is logged each time.
// Its methods are safe for concurrent use; a nil *Outage logs each
// failure.
type Outage struct {
	// Log is where it logs; What names the loop's work in its messages
	// ("work", "expiring overdue calls", "heartbeat").
	Log  *slog.Logger
	What string
	// Classify, when set, maps a driver's failure to the store's
	// sentinels (sqlstore.DB.Classify), so that a raw "conn closed"
	// counts as the database being unavailable.
	Classify func(error) error

	mu     sync.Mutex
	since  time.Time // when the outage began; zero: none
	missed int       // failures since, not logged
}

// Failed logs err, a failure of the loop's work, at level, unless it
// is one more of an outage already logged.
func (o *Outage) Failed(level slog.Level, err error) {
	if o.Classify != nil {
		err = o.Classify(err)
	}
	if !errors.Is(err, store.ErrUnavailable) {
		o.Log.Log(context.Background(), level, o.What+" failed", "err", err.Error())
		return
	}
	o.mu.Lock()
	first := o.since.IsZero()
	if first {
		o.since = time.Now()
	} else {
		o.missed++
	}
	o.mu.Unlock()
	if first {
		o.Log.Log(context.Background(), level, o.What+" failed: the database cannot be used; trying again quietly until it can", "err", err.Error())
	}
}

// Worked ends an outage, if one is under way, saying how long it lasted.
func (o *Outage) Worked() {
	o.mu.Lock()
	since, missed := o.since, o.missed
	o.since, o.missed = time.Time{}, 0
	o.mu.Unlock()
	if !since.IsZero() {
		o.Log.Info(o.What+" works again", "after", time.Since(since).Round(time.Millisecond).String(), "failures", missed+1)
	}
}
