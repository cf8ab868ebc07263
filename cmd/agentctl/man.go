package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

const manHelp = `Man writes agentctl's manual into DIR, one page per command
(agentctl.1, agentctl-approve.1, agentctl-token-create.1, ...), making
DIR if needed and replacing pages already there. Read a page with
man -l DIR/agentctl-approve.1; or write them into a man1 directory on
your MANPATH, and man agentctl-approve finds it.`

func (a *app) manCmd() *cobra.Command {
	var markdown bool
	cmd := &cobra.Command{
		Use:   "man DIR",
		Short: "Write a man page per command into a directory",
		Long:  manHelp,
		Example: `  agentctl man ~/.local/share/man/man1 && man agentctl-approve
  agentctl man /tmp/agentctl-man && man -l /tmp/agentctl-man/agentctl.1`,
		Args: argsCheck(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			write := writeMan
			if markdown {
				write = writeMarkdown
			}
			n, err := write(cmd.Root(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%d pages written into %s\n", n, args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&markdown, "markdown", false, "write Markdown pages (agentctl.md, agentctl_approve.md, ...) instead: the CLI reference, docs/reference/cli")
	return cmd
}

// writeMarkdown is writeMan in Markdown: the CLI reference.
func writeMarkdown(root *cobra.Command, dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("man: %w", err)
	}
	root.DisableAutoGenTag = true
	root.InitDefaultCompletionCmd()
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		return 0, fmt.Errorf("man: %w", err)
	}
	return pages(root), nil
}

// writeMan writes a man page per available command of root into dir,
// making dir if needed, and returns how many. The pages carry no
// generation note, so they change only when the commands do (and their
// date, which $SOURCE_DATE_EPOCH sets).
func writeMan(root *cobra.Command, dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("man: %w", err)
	}
	root.DisableAutoGenTag = true
	root.InitDefaultCompletionCmd() // as Execute adds it: the same pages from a test
	hdr := &doc.GenManHeader{Title: "AGENTCTL", Section: "1", Source: "agentctl", Manual: "agentctl manual"}
	if err := doc.GenManTree(root, hdr, dir); err != nil {
		return 0, fmt.Errorf("man: %w", err)
	}
	return pages(root), nil
}

// pages counts the commands doc.GenManTree writes a page for: cmd and
// its available commands, recursively.
func pages(cmd *cobra.Command) int {
	n := 1
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() && !c.IsAdditionalHelpTopicCommand() {
			n += pages(c)
		}
	}
	return n
}
