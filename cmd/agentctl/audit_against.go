package main

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/chain"
	"github.com/agentctl/agentctl/engine/store/sqlstore"
)

// signedHeadIn reads the last signed head of a file of JSON lines (an
// export, or the heads a webhook received: headOf).
func signedHeadIn(path string) (*chain.SignedHead, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, inputErr(fmt.Errorf("--against: %w", err))
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	var head *chain.SignedHead
	for sc.Scan() {
		if h := headOf(sc.Bytes()); h != nil {
			head = h
		}
	}
	if err := sc.Err(); err != nil {
		return nil, inputErr(fmt.Errorf("--against %s: %w", path, err))
	}
	if head == nil {
		return nil, inputErr(fmt.Errorf("--against %s: %w", path, errors.New("no signed head in it")))
	}
	return head, nil
}

// headOf is the signed head a JSON line holds: an export's
// {"signedHead": ...}, a head as posted ({"type": "audit.head", ...}),
// or a receiver's log of one ({"body": ...}); nil: none.
func headOf(line []byte) *chain.SignedHead {
	var l struct {
		SignedHead *chain.SignedHead `json:"signedHead"`
		Signature  string            `json:"signature"`
		Body       json.RawMessage   `json:"body"`
	}
	if json.Unmarshal(line, &l) != nil {
		return nil
	}
	switch {
	case l.SignedHead != nil:
		return l.SignedHead
	case l.Signature != "":
		var h chain.SignedHead
		json.Unmarshal(line, &h)
		return &h
	case len(l.Body) > 0 && l.Body[0] == '{':
		return headOf(l.Body)
	}
	return nil
}

// checkAgainst checks the database's chain against the head signed in
// path: its signature with pub, then the record it names.
func checkAgainst(ctx context.Context, db *sqlstore.DB, rep *store.ChainReport, path string, pub ed25519.PublicKey) error {
	h, err := signedHeadIn(path)
	if err != nil {
		return err
	}
	rep.Checkpoints++
	if rep.Latest == nil || h.At > rep.Latest.At {
		rep.Latest = h
	}
	bad := func(why string) {
		if rep.Checkpoint == nil {
			rep.Checkpoint = &chain.Problem{Seq: h.Seq, Why: fmt.Sprintf("the head signed at %s in %s: %s", chain.Stamp(h.At), path, why)}
		}
	}
	if err := h.Verify(pub); err != nil {
		bad("its signature does not verify: it was forged or altered")
		return nil
	}
	rep.Verified++
	if h.Seq == 0 {
		return nil
	}
	ls, err := db.ChainLinks(ctx, h.Seq-1, 1)
	switch {
	case err != nil:
		return err
	case len(ls) == 0 || ls[0].Seq != h.Seq:
		bad(fmt.Sprintf("record %d is not in the database's chain: records were removed", h.Seq))
	case ls[0].Hash != h.Hash:
		bad(fmt.Sprintf("record %d's hash is %s, signed as %s: the chain was rewritten", h.Seq, chain.Short(ls[0].Hash), chain.Short(h.Hash)))
	}
	return nil
}
