package main

import (
	"io"
	"os"

	"github.com/agentctl/agentctl/engine/store"
)

// painted is standard output on a terminal that takes colour: statuses
// written to it are coloured (paint). Colour is for terminals only, and
// off with NO_COLOR (any value), TERM=dumb or --no-color.
type painted struct{ io.Writer }

// colorful reports whether w, standard output, takes colour.
func colorful(w io.Writer, noColor bool) bool {
	return !noColor && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb" && isTerminal(w)
}

// statusColors are the SGR colours of statuses: done green, failed red,
// waiting yellow, moving cyan, stalled magenta.
var statusColors = map[store.Status]string{
	store.Completed: "32", store.Failed: "31", store.Suspended: "33",
	store.Running: "36", store.Queued: "36", store.Stalled: "35",
}

// paint is status s as w shows it: coloured on a painted terminal. Every
// painted status carries the same 9 bytes of escapes, as does a column's
// header painted with paintHeader, so that a tabwriter, which counts
// them as width, still lines the column up.
func paint(w io.Writer, s store.Status) string {
	if _, ok := w.(painted); !ok {
		return string(s)
	}
	c, ok := statusColors[s]
	if !ok {
		c = "39" // the default colour: as wide as the others
	}
	return "\x1b[" + c + "m" + string(s) + "\x1b[0m"
}

// paintHeader is the header of a column of painted statuses: in the
// default colour, with as many bytes of escapes as each status.
func paintHeader(w io.Writer, h string) string {
	if _, ok := w.(painted); !ok {
		return h
	}
	return "\x1b[39m" + h + "\x1b[0m"
}
