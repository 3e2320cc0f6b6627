package devserver

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestTuneGC: without GOGC the process's target becomes GCPercent; a GOGC of the person's own is kept.
func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })

	t.Setenv("GOGC", "150") // restored, or unset again, when the test ends
	debug.SetGCPercent(150) // what the runtime did with it at start
	if got := TuneGC(); got != -1 {
		t.Errorf("with GOGC set, TuneGC() = %d, want -1", got)
	}
	if got := debug.SetGCPercent(150); got != 150 {
		t.Errorf("with GOGC=150, the target became %d", got)
	}

	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	if got := TuneGC(); got != GCPercent {
		t.Errorf("without GOGC, TuneGC() = %d, want %d", got, GCPercent)
	}
	if got := debug.SetGCPercent(100); got != GCPercent {
		t.Errorf("without GOGC, the target became %d, want %d", got, GCPercent)
	}
}
