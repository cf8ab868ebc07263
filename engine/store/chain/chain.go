// Package chain is agentctl's tamper-evident audit chain: each decision,
// refusal, escalation, rule denial and execution outcome becomes a record
// of canonical JSON (RFC 8785), and each link of the chain holds the
// SHA-256 of its record (its digest) and of the link before it. Editing,
// deleting or reordering a link breaks every hash after it; only a
// rewrite of the whole chain keeps it consistent, which a head signed
// before the rewrite (a checkpoint, an export) exposes.
//
// The package has no database: the store appends links and reads them
// back, and Verifier checks a sequence of links, from a database or from
// an export, the same way.
package chain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/internal/jcs"
)

// Kinds of record.
const (
	KindDecision   = "decision"    // a row of the decisions table: approve, decline, refused, resolve...
	KindEscalation = "escalation"  // a step of a waiting call's escalation ladder
	KindOutcome    = "outcome"     // an executed call's end: succeeded, failed or interrupted
	KindRuleDenied = "rule-denied" // a call a policy rule denied, never run
)

// Genesis is the previous hash of the first link.
var Genesis = strings.Repeat("0", 64)

// Record is the content of a link, before canonicalization. Strings that
// are not valid UTF-8 are kept exactly (Text); times are milliseconds
// since the epoch.
type Record struct {
	Kind string `json:"kind"`
	// Decision is the id of the decisions row a decision record is of.
	Decision   int64  `json:"decision,omitempty"`
	RunID      string `json:"run"`
	CallID     string `json:"call,omitempty"`
	Action     string `json:"action,omitempty"`
	By         string `json:"by,omitempty"`
	OSUser     string `json:"osUser,omitempty"`
	Via        string `json:"via,omitempty"`
	Reason     string `json:"reason,omitempty"`
	ArgsBefore string `json:"argsBefore,omitempty"`
	ArgsAfter  string `json:"argsAfter,omitempty"`
	Data       string `json:"data,omitempty"`
	// Status is an outcome's (succeeded, failed, interrupted); Result
	// the SHA-256 of the call's result, not the result itself.
	Status string `json:"status,omitempty"`
	Result string `json:"resultSha256,omitempty"`
	// Step and Step kind of an escalation; Rule the rule that denied.
	Step int    `json:"step,omitempty"`
	Rule string `json:"rule,omitempty"`
	At   int64  `json:"at"`
}

// Canonical is r's canonical JSON (RFC 8785): what jcs.Marshal writes
// of r, written directly, members in the order of their names (ASCII,
// so UTF-16 order is byte order), empty ones left out as omitempty
// does.
func (r Record) Canonical() ([]byte, error) {
	var b bytes.Buffer
	b.Grow(256 + len(r.Reason) + len(r.ArgsBefore) + len(r.ArgsAfter) + len(r.Data))
	b.WriteByte('{')
	str := func(k, v string, always bool) {
		if v == "" && !always {
			return
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + k + `":`)
		jcs.String(&b, Text(v))
	}
	num := func(k string, v int64, always bool) {
		if v == 0 && !always {
			return
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + k + `":` + strconv.FormatInt(v, 10))
	}
	str("action", r.Action, false)
	str("argsAfter", r.ArgsAfter, false)
	str("argsBefore", r.ArgsBefore, false)
	num("at", r.At, true)
	str("by", r.By, false)
	str("call", r.CallID, false)
	str("data", r.Data, false)
	num("decision", r.Decision, false)
	str("kind", r.Kind, true)
	str("osUser", r.OSUser, false)
	str("reason", r.Reason, false)
	str("resultSha256", r.Result, false)
	str("rule", r.Rule, false)
	str("run", r.RunID, true)
	str("status", r.Status, false)
	num("step", int64(r.Step), false)
	str("via", r.Via, false)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// textMark begins a string Text changed (a Unicode noncharacter).
const textMark = "\uFDD0"

// Text keeps s exactly in JSON, which holds only valid UTF-8: a string
// that is not, or that begins with textMark, becomes textMark followed by
// s as Go quotes it (an invalid byte is \xff). NUL needs nothing: JSON
// escapes it (\u0000).
func Text(s string) string {
	if utf8.ValidString(s) && !strings.HasPrefix(s, textMark) {
		return s
	}
	return textMark + strconv.Quote(s)
}

// Result is the SHA-256 of a call's result, in hex, as an outcome keeps it.
func Result(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Link is one link of the chain.
type Link struct {
	Seq    int64  `json:"seq"`
	Prev   string `json:"prev"`
	Digest string `json:"digest"` // SHA-256 of Record
	Hash   string `json:"hash"`   // SHA-256 of seq, Prev and Digest
	Kind   string `json:"kind"`
	RunID  string `json:"run,omitempty"`
	// Record is the canonical JSON; nil once pruned (the digest stays).
	Record json.RawMessage `json:"record,omitempty"`
	// Decision is the decisions row's id, for a decision.
	Decision int64 `json:"decision,omitempty"`
	At       int64 `json:"at"`
	PrunedAt int64 `json:"prunedAt,omitempty"`
}

// Digest is the SHA-256 of canonical content, in hex.
func Digest(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}

// LinkHash is the hash of the link at seq: over its place, the previous
// link's hash and its own record's digest.
func LinkHash(seq int64, prev, digest string) string {
	sum := sha256.Sum256([]byte("agentctl audit chain v1\n" + strconv.FormatInt(seq, 10) + "\n" + prev + "\n" + digest))
	return hex.EncodeToString(sum[:])
}

// Next builds the link after prev (nil: the first) of record r.
func Next(prev *Link, r Record) (Link, error) {
	content, err := r.Canonical()
	if err != nil {
		return Link{}, fmt.Errorf("audit record: %w", err)
	}
	l := Link{Seq: 1, Prev: Genesis, Kind: r.Kind, RunID: r.RunID, Record: content, Decision: r.Decision, At: r.At}
	if prev != nil {
		l.Seq, l.Prev = prev.Seq+1, prev.Hash
	}
	l.Digest = Digest(content)
	l.Hash = LinkHash(l.Seq, l.Prev, l.Digest)
	return l, nil
}

// Stamp writes milliseconds since the epoch as an RFC 3339 time (UTC).
func Stamp(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}
