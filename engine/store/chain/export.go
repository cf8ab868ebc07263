package chain

import (
	"bufio"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// An export is JSON lines: one link a line, in order, then one line
// {"signedHead": ...} with the head signed when it was written.

// ExportLine is one line of an export.
type ExportLine struct {
	*Link
	SignedHead *SignedHead `json:"signedHead,omitempty"`
}

// ErrUnsigned is an export without a signed head: its links can be
// checked against each other, not against a rewrite.
var ErrUnsigned = errors.New("the export has no signed head (agentctl audit export --signed)")

// VerifyExport checks an export read from r with pub: each link, and the
// signed head against the last link. The report's Problem is the first
// link that does not match, or a head that does not; err is an export
// that cannot be read, or ErrUnsigned.
func VerifyExport(r io.Reader, pub ed25519.PublicKey) (Report, *SignedHead, error) {
	var v Verifier
	var head *SignedHead
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l ExportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return v.Report(), nil, fmt.Errorf("line %d: %w", n, err)
		}
		switch {
		case head != nil:
			return v.Report(), nil, fmt.Errorf("line %d: a line after the signed head", n)
		case l.SignedHead != nil:
			head = l.SignedHead
		case l.Link != nil:
			v.Add(*l.Link)
		}
	}
	if err := sc.Err(); err != nil {
		return v.Report(), nil, err
	}
	rep := v.Report()
	if rep.Problem != nil {
		return rep, head, nil
	}
	if head == nil {
		return rep, nil, ErrUnsigned
	}
	if err := head.Verify(pub); err != nil {
		rep.Problem = &Problem{Seq: head.Seq, Why: "the signed head: " + err.Error()}
		return rep, head, nil
	}
	end := rep.Head
	if rep.Records == 0 {
		end.Hash = Genesis
	}
	if head.Seq != end.Seq || head.Hash != end.Hash {
		rep.Problem = &Problem{Seq: head.Seq, Why: fmt.Sprintf("the signed head is record %d, hash %s; the export ends at record %d, hash %s: the chain was rewritten or cut",
			head.Seq, short(head.Hash), end.Seq, short(end.Hash))}
	}
	return rep, head, nil
}
