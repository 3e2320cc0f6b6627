package main

import (
	"strings"
	"testing"
)

func TestParseAndWrite(t *testing.T) {
	in := `goos: linux
goarch: amd64
pkg: github.com/lucy-agent/lucy/e2e
cpu: Some CPU @ 2.0GHz
BenchmarkTurnOverhead-2   	       1	6839634064 ns/op	       100.5 ms/turn
    bench_test.go:99: 50 turns in 4.925s: 100.5 ms of orchestration per turn (66 model calls)
PASS
ok  	github.com/lucy-agent/lucy/e2e	10.1s
pkg: github.com/lucy-agent/lucy/output
BenchmarkSplit-2   	   12345	     95000 ns/op	    2048 B/op	      12 allocs/op
PASS
`
	benches, header, err := parse(strings.NewReader(in))
	if err != nil || len(benches) != 2 || header["cpu"] != "Some CPU @ 2.0GHz" {
		t.Fatalf("%+v %v %v", benches, header, err)
	}
	if got := strings.Join(benches[0].metrics, ", "); got != "100.5 ms/turn" {
		t.Errorf("turn overhead figures %q", got)
	}
	if got := strings.Join(benches[1].metrics, ", "); got != "95000 ns/op, 2048 B/op, 12 allocs/op" {
		t.Errorf("split figures %q", got)
	}
	var out strings.Builder
	write(&out, benches, header, "go tool task bench")
	for _, want := range []string{"| TurnOverhead | 100.5 ms/turn |",
		"| Orchestration per turn, instant model | ≤ 12 ms/turn | 100.5 (missed) | not run |",
		"| Orchestration share of a turn, 500 ms model | ≤ 2 %overhead | not run | — |", "- 50 turns in 4.925s: 100.5 ms of orchestration per turn (66 model calls)", "Some CPU"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// A figure within its bound is met, on either side of the bound, and a cluster figure sits beside
// lucy dev's.
func TestTargets(t *testing.T) {
	in := `BenchmarkConversationsPerSecond-2   	       1	6839634064 ns/op	       41.20 conversations/s
BenchmarkClusterConversationsPerSecond-2   	       1	6839634064 ns/op	       39.9 conversations/s	0 lost
BenchmarkAckLatency-2   	       1	1 ns/op	       20 ack-p50-ms	100 ack-p99-worst-10s-ms	0 lost	1 duplicated
BenchmarkSteadyState-2   	       1	1 ns/op	       44.0 fresh-conversations/s	41.0 conversations/s	93.18 %of-fresh-rate	130.0 %of-fresh-sign-p99
BenchmarkBurst-2   	       1	1 ns/op	       16.6 answered/s-at-20/s	7.2 answered/s-at-100/s	43.37 %burst-ratio
`
	benches, _, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	writeTargets(&out, benches)
	for _, want := range []string{
		"| New conversations answered end to end | ≥ 40 conversations/s | 41.20 (met) | 39.9 (missed) |",
		"| Ack p99, worst 10 s window at 100 events/s | ≤ 100 ack-p99-worst-10s-ms | 100 (met) | — |",
		"| Acknowledged events lost | ≤ 0 lost | 0 (met) | — |",
		"| Acknowledged events duplicated | ≤ 0 duplicated | 1 (missed) | — |",
		"| Steady state: conversations/s, share of the fresh stack's | ≥ 90 %of-fresh-rate | 93.18 (met) | — |",
		"| Steady state: first sign of life p99, share of the fresh stack's | ≤ 110 %of-fresh-sign-p99 | 130.0 (missed) | — |",
		"| Burst: new threads at 100/s answered at a share of the rate at 20/s | ≥ 80 %burst-ratio | 43.37 (missed) | — |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("targets lack %q:\n%s", want, out.String())
		}
	}
}
