package notify

import (
	"fmt"
	"strings"
)

// previewSummaryLines is how many lines of a preview a chat message
// shows: the inbox, linked below it, shows it whole.
const previewSummaryLines = 12

// previewLabel heads a preview's section: its outcome, and a drift.
func previewLabel(p *Preview) string {
	label := "Preview"
	if p.Status != "" && p.Status != "ok" {
		label += " (" + oneLine(p.Status, 40) + ": " + oneLine(p.Error, 200) + ")"
	}
	if p.Drift != "" {
		label += fmt.Sprintf(" — changed since the approval (%s): approve again", oneLine(p.Drift, 40))
	}
	return label
}

// previewSummary is the first lines of a preview's output, and how many
// more the inbox shows.
func previewSummary(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) <= previewSummaryLines {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:previewSummaryLines], "\n") + fmt.Sprintf("\n[... %d more lines: open the inbox]", len(lines)-previewSummaryLines)
}
