package store

import (
	"strings"
	"time"
)

// Preview is what a tool's preview showed for one call (docs/previews.md):
// its output, with the tool's secrets cut and capped, its outcome, and
// the digest an approval binds to.
type Preview struct {
	// Status is ok, failed or timed-out.
	Status PreviewStatus `json:"status"`
	// Output is what it showed: an exec's stdout (its stderr after it),
	// an http response's body, a file's content or listing.
	Output string `json:"output"`
	// Error says why it failed or timed out.
	Error string `json:"error,omitempty"`
	// Digest is "sha256:" and the hex SHA-256 of the call's canonical
	// arguments and the preview's whole result: what an approval of it
	// binds to.
	Digest string `json:"digest"`
	// ArgsDigest is the SHA-256 of the canonical arguments it ran with.
	ArgsDigest string `json:"argsDigest"`
	// At is when it ran.
	At time.Time `json:"at"`
}

// PreviewStatus is how a preview ended.
type PreviewStatus string

// Preview statuses.
const (
	PreviewOK       PreviewStatus = "ok"
	PreviewFailed   PreviewStatus = "failed"
	PreviewTimedOut PreviewStatus = "timed-out"
)

// Drift is a preview approved, then contradicted just before execution.
type Drift struct {
	// Cause is why: "output" (the preview shows something else now) or
	// "arguments" (an approval edited them).
	Cause string `json:"cause"`
	// Approved is the preview the approval was of.
	Approved Preview `json:"approved"`
}

// Diff reports whether the output looks like a unified diff: lines of
// ---/+++ headers or @@ hunks.
func (p *Preview) Diff() bool {
	if p == nil {
		return false
	}
	for _, l := range strings.Split(p.Output, "\n") {
		if strings.HasPrefix(l, "@@ ") || strings.HasPrefix(l, "+++ ") || strings.HasPrefix(l, "diff ") {
			return true
		}
	}
	return false
}
