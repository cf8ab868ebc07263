package main

import (
	"bufio"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/engine/store/chain"
)

func (a *app) auditExportCmd() *cobra.Command {
	var keyFile, out string
	var signed bool
	cmd := &cobra.Command{
		Use:   "export [--signed --key FILE] [-o jsonl]",
		Short: "Write the audit chain's records, with a signed head",
		Long: `Write every record of the audit chain as JSON lines, in order (a pruned
record keeps its hashes, not its content), then, with --signed, the
chain's head signed with the Ed25519 key --key FILE (agentctl audit
keygen). agentctl audit verify --pubkey audit.pub EXPORT checks the file
on any machine, without the database. It only reads the database; the
key is never stored.

Example:
  agentctl audit export --signed --key audit.key > audit.jsonl`,
		Args: argsCheck(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out != "jsonl" {
				return usageErr(fmt.Errorf("-o %q: want jsonl", out))
			}
			if signed != (keyFile != "") {
				return usageErr(fmt.Errorf("--signed and --key FILE go together: the key signs the head"))
			}
			var key ed25519.PrivateKey
			if signed {
				var err error
				if key, err = readSigningKey("--key", keyFile); err != nil {
					return err
				}
			}
			a.dbOpts.ReadOnly = true
			db, err := a.store(cmd.Context())
			if err != nil {
				return err
			}
			w := bufio.NewWriter(a.stdout)
			links := func(after int64) ([]chain.Link, error) { return db.ChainLinks(cmd.Context(), after, 1000) }
			n, err := writeExport(w, links, key, time.Now().UnixMilli())
			if err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return err
			}
			what := "unsigned"
			if key != nil {
				what = "signed with key " + chain.KeyID(key.Public().(ed25519.PublicKey))
			}
			fmt.Fprintf(a.stderr, "exported %d records, %s\n", n, what)
			return nil
		},
	}
	cmd.Flags().BoolVar(&signed, "signed", false, "end with the chain's head signed with --key")
	cmd.Flags().StringVar(&keyFile, "key", "", "the private key (audit.key) that signs the head: `FILE`")
	cmd.Flags().StringVarP(&out, "output", "o", "jsonl", "output format: jsonl")
	return cmd
}

// newLineEncoder writes values as JSON lines, HTML characters as they are.
func newLineEncoder(w io.Writer) func(v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode
}
