package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentctl/agentctl/engine/store"
)

// previewLines bounds the lines of a preview's output a terminal shows;
// -o json has it whole.
const previewLines = 200

// printCallPreview prints what a pending call's preview showed, and, when a
// run before execution contradicted the one approved, that one too.
func printCallPreview(w io.Writer, pad string, p *store.Preview, d *store.Drift) {
	if d != nil {
		if d.Cause == "arguments" {
			fmt.Fprintf(w, "%spreview drift: the approval edited the arguments; the call did not run: it waits for an approval of the edit, previewed\n", pad)
		} else {
			fmt.Fprintf(w, "%spreview drift: its output changed after the approval; the call did not run and waits for a new decision\n", pad)
		}
		printOnePreview(w, pad, "approved preview", &d.Approved)
		printOnePreview(w, pad, "preview now", p)
		return
	}
	printOnePreview(w, pad, "preview", p)
}

// printOnePreview prints one preview under a label: its outcome and
// digest, then its output, indented, each line escaped.
func printOnePreview(w io.Writer, pad, label string, p *store.Preview) {
	if p == nil {
		return
	}
	fmt.Fprintf(w, "%s%s: %s", pad, label, p.Status)
	if p.Error != "" {
		fmt.Fprintf(w, " (%s)", oneLine(p.Error, 200))
	}
	fmt.Fprintf(w, "  %s\n", p.Digest)
	out := strings.TrimRight(p.Output, "\n")
	if out == "" {
		return
	}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if i == previewLines {
			fmt.Fprintf(w, "%s  [... %d more lines: -o json shows them all]\n", pad, len(lines)-i)
			break
		}
		fmt.Fprintf(w, "%s  | %s\n", pad, escaped(l, false))
	}
}
