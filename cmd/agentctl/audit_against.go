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

// signedHeadIn reads the last signed head of a file: an export's
// {"signedHead": ...} line, or a head as a webhook received it.
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
		var l struct {
			SignedHead *chain.SignedHead `json:"signedHead"`
			Signature  string            `json:"signature"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		if l.SignedHead != nil {
			head = l.SignedHead
		} else if l.Signature != "" {
			var h chain.SignedHead
			json.Unmarshal(sc.Bytes(), &h)
			head = &h
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
