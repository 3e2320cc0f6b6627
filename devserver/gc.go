package devserver

import (
	"os"
	"runtime/debug"
)

// GCPercent is the garbage collector's target (GOGC) of a process that runs the embedded server.
//
// The process holds the Temporal server, the worker and the gateway, and the server allocates most
// of what it collects: about 5 MB of garbage per conversation, freed within milliseconds. At Go's
// default of 100 the collector took about a tenth of the CPU of BenchmarkConversationsPerSecond on
// 2 cores. A higher target collects less often, and costs memory twice: the heap grows further
// between collections, and what stays live is spread over more of it, so each idle thread holds
// more (measured on BenchmarkIdleLanesAndActiveRuns, the worker's part of an idle lane: 81 KB at
// 100, 89 at 150, 105 to 112 at 200 and 300, against a bound of 100). Conversations answered a
// second, interleaved runs: 37 to 38 at 100, 39 to 41 at 150, 40 to 41 at 300. 150 keeps the idle
// lane within its bound and has most of the gain.
const GCPercent = 150

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
