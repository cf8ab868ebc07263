package web

import (
	"encoding/json"
	"strings"
)

// previewView is a call's preview as the inbox shows it: its outcome,
// digest, and output line by line, each line classed as a diff's when
// the output looks like a unified diff (docs/previews.md).
type previewView struct {
	Status string `json:"status"`
	Output string `json:"output"`
	Error  string `json:"error"`
	Digest string `json:"digest"`
	Diff   bool
	Lines  []previewLine
}

// previewLine is one line of a preview; Class is add, del, hunk or
// head in a diff, "" otherwise.
type previewLine struct {
	Class string
	Text  string
}

// previewOf reads a preview from the API's JSON; nil for none.
func previewOf(raw json.RawMessage) *previewView {
	if len(raw) == 0 {
		return nil
	}
	var p previewView
	if json.Unmarshal(raw, &p) != nil {
		return nil
	}
	lines := strings.Split(strings.TrimRight(p.Output, "\n"), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "@@ ") || strings.HasPrefix(l, "+++ ") || strings.HasPrefix(l, "diff ") {
			p.Diff = true
		}
	}
	for _, l := range lines {
		p.Lines = append(p.Lines, previewLine{Class: lineClass(p.Diff, l), Text: l})
	}
	return &p
}

// lineClass is how a line of a diff is coloured.
func lineClass(diff bool, l string) string {
	switch {
	case !diff:
		return ""
	case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "diff "):
		return "head"
	case strings.HasPrefix(l, "@@"):
		return "hunk"
	case strings.HasPrefix(l, "+"):
		return "add"
	case strings.HasPrefix(l, "-"):
		return "del"
	}
	return ""
}

// driftOf reads a preview drift from the API's JSON: its cause and the
// preview approved; nil for none.
func driftOf(raw json.RawMessage) *driftView {
	if len(raw) == 0 {
		return nil
	}
	var d struct {
		Cause    string          `json:"cause"`
		Approved json.RawMessage `json:"approved"`
	}
	if json.Unmarshal(raw, &d) != nil {
		return nil
	}
	return &driftView{Cause: d.Cause, Approved: previewOf(d.Approved)}
}

// driftView is a preview drift as the inbox shows it.
type driftView struct {
	Cause    string
	Approved *previewView
}
