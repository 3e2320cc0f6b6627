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
	for _, want := range []string{"| TurnOverhead | 100.5 ms/turn |", "- 50 turns in 4.925s: 100.5 ms of orchestration per turn (66 model calls)", "Some CPU"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
