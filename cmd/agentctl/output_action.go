package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/toolkits"
)

// printAction prints what a call of an uploaded spec will do: as
// rendered with its arguments, then as written when that differs.
// Values from the model are escaped: they cannot drive the terminal.
func printAction(w io.Writer, pad string, a *engine.ActionView) {
	if a == nil {
		return
	}
	if a.Error != "" {
		fmt.Fprintf(w, "%swill: fail: %s\n", pad, escaped(a.Error, false))
	}
	if a.Rendered != nil {
		printPreview(w, pad+"will: ", pad+"  ", *a.Rendered)
	}
	printPreview(w, pad+"as written: ", pad+"  ", a.Template)
}

// printPreview prints a preview: its action on the first line, then its
// headers, environment and body or content, one a line.
func printPreview(w io.Writer, first, pad string, p toolkits.Preview) {
	head := p.Line()
	fmt.Fprintf(w, "%s%s\n", first, escaped(head, false))
	for _, k := range slices.Sorted(maps.Keys(p.Headers)) {
		fmt.Fprintf(w, "%sheader %s: %s\n", pad, escaped(k, false), escaped(p.Headers[k], false))
	}
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		fmt.Fprintf(w, "%senv %s=%s\n", pad, escaped(k, false), escaped(p.Env[k], false))
	}
	if p.Body != "" {
		fmt.Fprintf(w, "%sbody: %s\n", pad, escaped(p.Body, false))
	}
	if p.Content != "" {
		fmt.Fprintf(w, "%scontent: %s\n", pad, escaped(p.Content, false))
	}
}

// hintData is the resume data a hint shows: the template -i starts an
// edit from (resumeTemplate), on one line; {...} when the schema gives
// none, or when it would need quoting for the shell.
func hintData(schema json.RawMessage) string {
	var b bytes.Buffer
	if len(schema) == 0 || json.Compact(&b, resumeTemplate(schema)) != nil {
		return "{...}"
	}
	out := b.String()
	if out == "{}" || strings.ContainsAny(out, "'\\") {
		return "{...}"
	}
	return out
}
