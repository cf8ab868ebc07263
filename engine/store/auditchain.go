package store

import (
	"context"
	"crypto/ed25519"

	"github.com/agentctl/agentctl/engine/store/chain"
)

// ChainReport is what a verification of a database's audit chain found.
type ChainReport struct {
	chain.Report
	// Unchained is how many decisions were made before the chain began
	// (a database written by an agentctl without it): not chained.
	Unchained int
	// Mismatch is the first row of the decisions table that does not
	// match its chained record, or is missing from the chain; nil: none.
	Mismatch *chain.Problem
	// Checkpoints is how many signed heads were checked against the
	// chain; Latest the newest of them.
	Checkpoints int
	Latest      *chain.SignedHead
	// Verified is how many of them the key given verified (none given:
	// 0, their signatures unchecked).
	Verified int
	// Checkpoint is the first signed head that does not match the chain
	// (or whose signature does not verify); nil: none.
	Checkpoint *chain.Problem
}

// Intact says whether nothing was found wrong.
func (r *ChainReport) Intact() bool {
	return r.Problem == nil && r.Mismatch == nil && r.Checkpoint == nil
}

// ChainStore reads the audit chain and keeps its signed heads. Only
// SaveCheckpoint writes.
type ChainStore interface {
	// VerifyChain recomputes the chain, checks the decisions table
	// against it and the stored checkpoints against both; with pub, the
	// checkpoints' signatures too.
	VerifyChain(ctx context.Context, pub ed25519.PublicKey) (*ChainReport, error)
	// ChainLinks returns up to limit links after seq, in order.
	ChainLinks(ctx context.Context, after int64, limit int) ([]chain.Link, error)
	// ChainHead returns the chain's last link's place and hash (ok
	// false: the chain is empty).
	ChainHead(ctx context.Context) (h chain.Head, ok bool, err error)
	// SaveCheckpoint stores a signed head (signer: who signed it, such
	// as serve or worker), once per head and key.
	SaveCheckpoint(ctx context.Context, h chain.SignedHead, signer string) error
}
