package main

import (
	"runtime/debug"
	"testing"
)

// A short command raises the collector's target, a long-running one puts
// it back, and GOGC, when set, wins over both.
func TestGCTarget(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	gcForShortCommand()
	if got := debug.SetGCPercent(100); got != shortGC {
		t.Errorf("short command: GC percent %d, want %d", got, shortGC)
	}
	debug.SetGCPercent(shortGC)
	gcForLongRunning()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("long-running command: GC percent %d, want 100", got)
	}
	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50)
	gcForShortCommand()
	gcForLongRunning()
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("with GOGC=50: GC percent %d, want 50", got)
	}
}
