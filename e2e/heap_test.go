package e2e

import (
	"bytes"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// heapOwners is the live heap of the benchmark's process by who allocated it, from a heap profile:
// the benchmark runs `lucy dev`'s server, the worker, the gateway and the fakes of Slack and the
// model in one process, and only the worker's part is what a worker process of a deployment holds.
type heapOwners struct {
	server float64 // the embedded Temporal server (any stack through go.temporal.io/server or a gRPC server)
	fakes  float64 // the local Slack workspace and the fake model, which keep every message and request
	worker float64 // everything else: the SDK's worker and its workflow cache, Lucy's activities, the gateway
}

func (h heapOwners) total() float64 { return h.server + h.fakes + h.worker }

func (h heapOwners) minus(o heapOwners) heapOwners {
	return heapOwners{server: h.server - o.server, fakes: h.fakes - o.fakes, worker: h.worker - o.worker}
}

// heapProfileRate is the sampling rate the memory benchmark sets before it starts anything: one
// sample every 16 KB allocated, so that a thousand lanes' heap is thousands of samples (the default,
// 512 KB, would give a few hundred).
const heapProfileRate = 16 << 10

// heapByOwner collects garbage and sorts the heap profile's live bytes by owner.
func heapByOwner(tb testing.TB) heapOwners {
	tb.Helper()
	runtime.GC()
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
		tb.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		tb.Fatal(err)
	}
	inuse := -1
	for i, st := range p.SampleType {
		if st.Type == "inuse_space" {
			inuse = i
		}
	}
	if inuse < 0 {
		tb.Fatal("heap profile without inuse_space")
	}
	var h heapOwners
	for _, s := range p.Sample {
		v := float64(s.Value[inuse])
		switch heapOwner(s) {
		case "server":
			h.server += v
		case "fakes":
			h.fakes += v
		default:
			h.worker += v
		}
	}
	return h
}

// heapOwner names who allocated a sample: the server wins over anything else on the stack (the
// worker's gRPC client is never under a gRPC server's frames; the server's handlers are).
func heapOwner(s *profile.Sample) string {
	owner := "worker"
	for _, loc := range s.Location {
		for _, line := range loc.Line {
			if line.Function == nil {
				continue
			}
			fn := line.Function.Name
			switch {
			case strings.HasPrefix(fn, "go.temporal.io/server/"), strings.HasPrefix(fn, "google.golang.org/grpc.(*Server)"):
				return "server"
			case strings.HasPrefix(fn, "github.com/lucy-agent/lucy/localslack."), strings.HasPrefix(fn, "github.com/lucy-agent/lucy/internal/fakellm."):
				owner = "fakes"
			}
		}
	}
	return owner
}
