package devserver

import (
	"os"
	"runtime/debug"
)

// GCPercent is the garbage collector's target (GOGC) of a process that runs the embedded server.
//
// The process holds the Temporal server, the worker and the gateway, and the server allocates most
// of what it collects: about 6 MB of garbage per conversation, freed within milliseconds. At Go's
// default of 100, the collector ran after every 100 MB or so and took about a tenth of the CPU of
// BenchmarkConversationsPerSecond on 2 cores; at 300 it runs a third as often, and the benchmark
// answered 36–37 conversations a second where it answered 32–33 (200: 35–36, 600: 37–38). The price
// is memory: the heap may grow to four times what is live before a collection, where it grew to
// twice. Measured on that benchmark: 660 MB of peak resident memory, against 465 MB at 100. An idle
// lane's cost is unchanged (what stays live is the same).
const GCPercent = 300

// TuneGC sets the process's GOGC to GCPercent unless the environment sets GOGC itself, which the
// runtime has then applied already. GOMEMLIMIT, if set, still caps the heap: the collector then runs
// whenever it must to stay under it. It reports the target in effect, or -1 when GOGC's own was kept.
func TuneGC() int {
	if _, set := os.LookupEnv("GOGC"); set {
		return -1
	}
	debug.SetGCPercent(GCPercent)
	return GCPercent
}
