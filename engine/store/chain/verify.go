package chain

import (
	"bytes"
	"fmt"

	"github.com/agentctl/agentctl/internal/jcs"
)

// Problem is the first link that does not match, and why.
type Problem struct {
	Seq int64
	Why string
}

func (p *Problem) Error() string {
	if p.Seq == 0 {
		return p.Why
	}
	return fmt.Sprintf("record %d: %s", p.Seq, p.Why)
}

// Range is a run of pruned links: their records are gone, their digests
// and hashes kept (tombstones).
type Range struct {
	From, To int64
	At       int64 // when they were pruned (the latest of the range)
}

// Report is what a verification found.
type Report struct {
	// Records is how many links were checked; First and Head the first
	// and last of them.
	Records     int
	First, Head Link
	// Pruned are the pruned ranges, in order.
	Pruned []Range
	// Problem is the first link that does not match; nil: intact.
	Problem *Problem
}

// Verifier checks links in order; the zero value expects the chain's
// first link.
type Verifier struct {
	r    Report
	prev *Link
}

// Add checks the next link; false once a problem is found (Report says
// which), after which it checks nothing more.
func (v *Verifier) Add(l Link) bool {
	if v.r.Problem != nil {
		return false
	}
	if why := v.check(l); why != "" {
		v.r.Problem = &Problem{Seq: l.Seq, Why: why}
		return false
	}
	if v.r.Records == 0 {
		v.r.First = l
	}
	v.r.Records++
	v.r.Head = l
	if l.Record == nil {
		n := len(v.r.Pruned)
		if n > 0 && v.r.Pruned[n-1].To == l.Seq-1 {
			v.r.Pruned[n-1].To, v.r.Pruned[n-1].At = l.Seq, max(v.r.Pruned[n-1].At, l.PrunedAt)
		} else {
			v.r.Pruned = append(v.r.Pruned, Range{From: l.Seq, To: l.Seq, At: l.PrunedAt})
		}
	}
	c := l
	v.prev = &c
	return true
}

// check says what is wrong with l after v.prev ("" nothing).
func (v *Verifier) check(l Link) string {
	wantSeq, wantPrev := int64(1), Genesis
	if v.prev != nil {
		wantSeq, wantPrev = v.prev.Seq+1, v.prev.Hash
	}
	switch {
	case l.Seq < wantSeq:
		return fmt.Sprintf("out of order: it comes after record %d", wantSeq-1)
	case l.Seq > wantSeq && wantSeq == l.Seq-1:
		return fmt.Sprintf("record %d is missing (deleted)", wantSeq)
	case l.Seq > wantSeq:
		return fmt.Sprintf("records %d to %d are missing (deleted)", wantSeq, l.Seq-1)
	case l.Prev != wantPrev:
		return fmt.Sprintf("its previous hash %s is not that of record %d (%s): a record before it was changed, removed or moved",
			short(l.Prev), wantSeq-1, short(wantPrev))
	}
	if l.Record != nil {
		if c, err := jcs.Canonicalize(l.Record); err != nil || !bytes.Equal(c, l.Record) {
			return "its record is not canonical JSON: it was edited"
		}
		if d := Digest(l.Record); d != l.Digest {
			return fmt.Sprintf("its content does not match its digest (%s, recorded %s): it was edited", short(d), short(l.Digest))
		}
	}
	if h := LinkHash(l.Seq, l.Prev, l.Digest); h != l.Hash {
		return fmt.Sprintf("its hash does not match its content (%s, recorded %s): it was edited", short(h), short(l.Hash))
	}
	return ""
}

// Report returns what the links added so far showed.
func (v *Verifier) Report() Report { return v.r }

// short is the first 12 hex digits of a hash, as messages show it.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// Short is the first 12 hex digits of a hash, as messages show it.
func Short(h string) string { return short(h) }
