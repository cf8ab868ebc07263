package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/chain"
)

const auditVerifyHelp = `Recompute the audit chain: every decision, refusal, escalation, rule
denial and execution outcome is a record holding the SHA-256 of its
canonical content (RFC 8785) and of the record before it. It reads only.

On the database, it also checks each row of the decisions table against
its record, and the signed heads (checkpoints) that serve and workers
store, against the chain; with --pubkey, their signatures too. It prints
"N records, chain intact, head H" and exits 0, or names the first record
that does not match and why, and exits 1.

With an EXPORT file (agentctl audit export --signed) and --pubkey, it
verifies the export alone, on any machine, without a database. With
--against FILE (an export, or a head a webhook received), it checks the
database's chain against the head signed in it: a rewrite of the whole
chain since then shows.

What it cannot see: a rewrite of the whole chain made consistently, after
the last head signed elsewhere; keep signed heads away from the database
(docs/audit.md).

Examples:
  agentctl audit verify
  agentctl audit verify --pubkey audit.pub
  agentctl audit verify --pubkey audit.pub audit-2026-12.jsonl
  agentctl audit verify --pubkey audit.pub --against audit-2026-12.jsonl`

func (a *app) auditVerifyCmd() *cobra.Command {
	var pubFile, out, against string
	cmd := &cobra.Command{
		Use:   "verify [--pubkey FILE] [EXPORT]",
		Short: "Check that the audit chain was not altered",
		Long:  auditVerifyHelp,
		Args:  argsCheck(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out != "text" && out != "json" {
				return usageErr(fmt.Errorf("-o %q: want text or json", out))
			}
			var pub ed25519.PublicKey
			if pubFile != "" {
				b, err := os.ReadFile(pubFile)
				if err != nil {
					return inputErr(fmt.Errorf("--pubkey: %w", err))
				}
				if pub, err = chain.ParsePublicKey(b); err != nil {
					return inputErr(fmt.Errorf("--pubkey %s: %w", pubFile, err))
				}
			}
			if len(args) == 1 {
				if pub == nil {
					return usageErr(errors.New("verifying an export needs the public key of its signature: --pubkey audit.pub"))
				}
				return a.verifyExport(args[0], pub, out)
			}
			a.dbOpts.ReadOnly = true
			db, err := a.store(cmd.Context())
			if err != nil {
				return err
			}
			rep, err := db.VerifyChain(cmd.Context(), pub)
			if err != nil {
				return err
			}
			if against != "" {
				if pub == nil {
					return usageErr(errors.New("--against: checking a signed head needs its public key: --pubkey audit.pub"))
				}
				if err := checkAgainst(cmd.Context(), db, rep, against, pub); err != nil {
					return err
				}
			}
			if pub != nil && rep.Verified == 0 && rep.Checkpoint == nil && rep.Records > 0 {
				// Asked to check signatures, with none to check: nothing
				// proves the chain against a rewrite of it and its heads.
				rep.Checkpoint = &chain.Problem{Why: fmt.Sprintf("no head is signed by key %s: nothing proves the chain against a rewrite; check it against a head kept elsewhere (--against FILE)", chain.KeyID(pub))}
			}
			return a.printChain(rep, out)
		},
	}
	cmd.Flags().StringVar(&pubFile, "pubkey", "", "the public key (audit.pub) that checks the signed heads: of the database's checkpoints, or of `FILE`'s export")
	cmd.Flags().StringVar(&against, "against", "", "also check the database's chain against the head signed in `FILE` (an export, or a published head): a rewrite since shows")
	cmd.Flags().StringVarP(&out, "output", "o", "text", "output format: text or json")
	return cmd
}

// verifyExport verifies an export file offline.
func (a *app) verifyExport(path string, pub ed25519.PublicKey, out string) error {
	f, err := os.Open(path)
	if err != nil {
		return inputErr(err)
	}
	defer f.Close()
	rep, head, err := chain.VerifyExport(f, pub)
	if err != nil {
		return &exitErr{code: exitError, err: fmt.Errorf("%s: %w", path, err)}
	}
	cr := &store.ChainReport{Report: rep, Latest: head}
	if head != nil {
		cr.Checkpoints, cr.Verified = 1, 1 // VerifyExport checked its signature
	}
	return a.printChain(cr, out)
}

// chainJSON is audit verify's -o json.
type chainJSON struct {
	Intact      bool              `json:"intact"`
	Records     int               `json:"records"`
	Head        *chain.Head       `json:"head,omitempty"`
	Unchained   int               `json:"unchained"`
	Pruned      []chain.Range     `json:"pruned,omitempty"`
	Problems    []string          `json:"problems,omitempty"`
	Checkpoints int               `json:"checkpoints"`
	Latest      *chain.SignedHead `json:"latestCheckpoint,omitempty"`
}

// printChain prints a verification's report; not intact, it exits 1.
func (a *app) printChain(rep *store.ChainReport, out string) error {
	var problems []string
	for _, p := range []*chain.Problem{rep.Problem, rep.Mismatch, rep.Checkpoint} {
		if p != nil {
			problems = append(problems, p.Error())
		}
	}
	if out == "json" {
		j := chainJSON{Intact: rep.Intact(), Records: rep.Records, Unchained: rep.Unchained, Pruned: rep.Pruned,
			Problems: problems, Checkpoints: rep.Checkpoints, Latest: rep.Latest}
		if rep.Records > 0 {
			j.Head = &chain.Head{Seq: rep.Head.Seq, Hash: rep.Head.Hash, At: rep.Head.At}
		}
		if err := writeJSON(a.stdout, j); err != nil {
			return err
		}
	} else {
		a.printChainText(rep, problems)
	}
	if !rep.Intact() {
		return &exitErr{code: exitError}
	}
	return nil
}

func (a *app) printChainText(rep *store.ChainReport, problems []string) {
	w := a.stdout
	switch {
	case len(problems) > 0:
		fmt.Fprintf(w, "chain altered: %s\n", problems[0])
		for _, p := range problems[1:] {
			fmt.Fprintf(w, "also: %s\n", p)
		}
		switch {
		case rep.Problem != nil && rep.Records > 0:
			fmt.Fprintf(w, "intact before it: %s, up to hash %s\n", records(rep.Records), rep.Head.Hash)
		case rep.Problem == nil:
			fmt.Fprintf(w, "the chain itself: %s, intact, head %s\n", records(rep.Records), rep.Head.Hash)
		}
	case rep.Records == 0:
		fmt.Fprintln(w, "0 records: the chain is empty")
	default:
		fmt.Fprintf(w, "%s, chain intact, head %s\n", records(rep.Records), rep.Head.Hash)
	}
	if rep.Records > 0 && rep.Unchained > 0 {
		fmt.Fprintf(w, "the chain starts at record %d, %s; decisions before it (%d) are not chained\n",
			rep.First.Seq, chain.Stamp(rep.First.At), rep.Unchained)
	} else if rep.Unchained > 0 {
		fmt.Fprintf(w, "decisions made before the chain began (%d) are not chained\n", rep.Unchained)
	}
	for _, r := range rep.Pruned {
		what := fmt.Sprintf("records %d to %d", r.From, r.To)
		if r.From == r.To {
			what = fmt.Sprintf("record %d", r.From)
		}
		fmt.Fprintf(w, "%s pruned at %s: their hashes are kept\n", what, chain.Stamp(r.At))
	}
	switch h := rep.Latest; {
	case len(problems) > 0:
	case h != nil:
		fmt.Fprintf(w, "signed heads: %d, the latest at record %d, signed %s with key %s", rep.Checkpoints, h.Seq, chain.Stamp(h.At), h.Key)
		if rep.Verified == 0 {
			fmt.Fprint(w, " (signatures not checked: --pubkey checks them)")
		}
		fmt.Fprintln(w)
	case rep.Records > 0:
		fmt.Fprintln(w, "no signed head: a rewrite of the whole chain would go unseen (docs/audit.md: sign heads)")
	}
}

// records is "1 record" or "N records".
func records(n int) string { return fmt.Sprintf("%d %s", n, plural(n, "record", "records")) }

func (a *app) auditKeygenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "keygen DIR",
		Short: "Make the Ed25519 key pair that signs the audit chain's heads",
		Long: `Write an Ed25519 key pair into DIR: audit.key, the private key (PKCS #8
PEM, mode 0600), which signs the chain's heads (serve's audit.signingKey,
worker --audit-key, audit export --key), and audit.pub, the public key
(PKIX PEM) that verifies them. An existing file is never overwritten.
Keep audit.key away from the database's administrators.

Example:
  agentctl audit keygen /etc/agentctl/audit`,
		Args: argsCheck(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			priv, pub, err := chain.GenerateKey()
			if err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			keyPath, pubPath := filepath.Join(dir, "audit.key"), filepath.Join(dir, "audit.pub")
			for _, p := range []string{keyPath, pubPath} {
				if _, err := os.Lstat(p); err == nil {
					return &exitErr{code: exitError, err: fmt.Errorf("%s exists: refusing to overwrite a key (move it away first)", p)}
				}
			}
			if err := writeNew(keyPath, priv, 0o600); err != nil {
				return err
			}
			if err := writeNew(pubPath, pub, 0o644); err != nil {
				return err
			}
			k, _ := chain.ParsePublicKey(pub)
			fmt.Fprintf(a.stdout, "wrote %s (private, mode 0600: keep it secret) and %s (public), key %s\n", keyPath, pubPath, chain.KeyID(k))
			return nil
		},
	}
}

// writeNew writes a file that must not exist.
func writeNew(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readSigningKey reads a private key file; its errors never quote it.
func readSigningKey(flag, path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, inputErr(fmt.Errorf("%s: %w", flag, err))
	}
	k, err := chain.ParsePrivateKey(b)
	if err != nil {
		return nil, inputErr(fmt.Errorf("%s %s: %w", flag, path, err))
	}
	return k, nil
}

// writeExport writes every link of the chain as JSON lines, then, with
// a key, the signed head.
func writeExport(w io.Writer, links func(after int64) ([]chain.Link, error), key ed25519.PrivateKey, now int64) (n int, err error) {
	enc := newLineEncoder(w)
	var last *chain.Link
	for after := int64(0); ; {
		ls, err := links(after)
		if err != nil {
			return n, err
		}
		for i := range ls {
			if err := enc(chain.ExportLine{Link: &ls[i]}); err != nil {
				return n, err
			}
			last = &ls[i]
		}
		n += len(ls)
		if len(ls) == 0 {
			break
		}
		after = ls[len(ls)-1].Seq
	}
	if key == nil {
		return n, nil
	}
	h := chain.Head{Seq: 0, Hash: chain.Genesis, At: now}
	if last != nil {
		h.Seq, h.Hash = last.Seq, last.Hash
	}
	sh := chain.Sign(key, h)
	return n, enc(chain.ExportLine{SignedHead: &sh})
}
