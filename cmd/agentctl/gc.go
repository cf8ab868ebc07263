package main

import (
	"os"
	"runtime/debug"
)

// shortGC is the collector's target for a command that starts, does one
// thing and exits: the first collection comes when the heap reaches
// about 16 MiB, not 4, so that a cold approve, which allocates a little
// over 4 MiB, exits without one (make bench: about 6% of its wall time,
// and a lower peak RSS). GOGC, when set, wins.
const shortGC = 400

// gcForShortCommand sets shortGC, unless GOGC is set.
func gcForShortCommand() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(shortGC)
	}
}

// gcForLongRunning puts the collector back to Go's default for a command
// that runs until stopped (serve, worker) or works through a whole
// database (prune, migrate --from), whose heap would otherwise grow to
// five times what it holds; GOGC, when set, wins.
func gcForLongRunning() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(100)
	}
}
