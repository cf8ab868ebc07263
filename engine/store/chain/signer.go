package chain

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"sync"
	"time"
)

// HeadStore is what a Signer needs of a store: the head, and a place
// for the signed heads.
type HeadStore interface {
	ChainHead(ctx context.Context) (Head, bool, error)
	SaveCheckpoint(ctx context.Context, h SignedHead, signer string) error
}

// Signer signs the chain's head every Every and when stopped, stores
// each signed head as a checkpoint, and hands it to Publish (when set)
// to keep it somewhere the database's administrators cannot rewrite. A
// head already signed is not signed again. The key is never stored or
// logged; failures are logged and tried again at the next tick.
type Signer struct {
	Store HeadStore
	Key   ed25519.PrivateKey
	// Name says who signs (serve, worker), as the checkpoint records it.
	Name  string
	Every time.Duration
	// Publish, when set, sends a signed head elsewhere (a webhook).
	Publish func(ctx context.Context, h SignedHead) error
	Log     *slog.Logger
	Now     func() time.Time

	last int64 // the seq last signed, +1 (0: none)
}

// Start signs until the returned function is called, which signs the
// head once more and waits.
func (s *Signer) Start(ctx context.Context) (stop func()) {
	if s.Now == nil {
		s.Now = time.Now
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(s.Every)
		defer t.Stop()
		for {
			s.Sign(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			s.Sign(context.WithoutCancel(ctx)) // at shutdown
		})
	}
}

// Sign signs the head now, unless it is signed already or the chain is
// empty; it reports whether it signed.
func (s *Signer) Sign(ctx context.Context) bool {
	h, ok, err := s.Store.ChainHead(ctx)
	if err != nil {
		s.Log.Warn("audit chain: read the head to sign it", "err", err.Error())
		return false
	}
	if !ok || h.Seq+1 == s.last {
		return false
	}
	h.At = s.Now().UnixMilli()
	sh := Sign(s.Key, h)
	if err := s.Store.SaveCheckpoint(ctx, sh, s.Name); err != nil {
		s.Log.Warn("audit chain: store the signed head", "seq", h.Seq, "err", err.Error())
		return false
	}
	s.last = h.Seq + 1
	s.Log.Info("audit chain head signed", "seq", h.Seq, "hash", h.Hash, "key", sh.Key)
	if s.Publish != nil {
		if err := s.Publish(ctx, sh); err != nil {
			s.Log.Warn("audit chain: publish the signed head", "seq", h.Seq, "err", err.Error())
		}
	}
	return true
}
