// Command benchreport turns the output of `go test -bench` into docs/benchmarks.md: each benchmark's
// figures (the metrics it reports) and the sentences it logs, with the machine, the date and the
// command, so that a figure in the docs can always be traced to a run. `go tool task bench` runs it.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

type bench struct {
	name    string
	metrics []string // "100.5 ms/turn"
	notes   []string // what the benchmark logged
}

func main() {
	command := flag.String("command", "go tool task bench", "the command that produced the input")
	flag.Parse()
	benches, header, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
	if len(benches) == 0 {
		fmt.Fprintln(os.Stderr, "benchreport: no benchmark results in the input")
		os.Exit(1)
	}
	write(os.Stdout, benches, header, *command)
}

// parse reads `go test -bench` output: "goos:"/"cpu:" header lines, result lines
// ("BenchmarkX-2  1  123 ns/op  4.5 ms/turn"), and the indented log lines that follow a result.
func parse(r io.Reader) ([]*bench, map[string]string, error) {
	header := map[string]string{}
	var out []*bench
	var cur *bench
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "goos:"), strings.HasPrefix(line, "goarch:"), strings.HasPrefix(line, "cpu:"):
			k, v, _ := strings.Cut(line, ":")
			header[k] = strings.TrimSpace(v)
		case strings.HasPrefix(line, "pkg:"):
			cur = nil
		case strings.HasPrefix(line, "Benchmark"):
			f := strings.Fields(line)
			if len(f) < 3 {
				continue
			}
			b := &bench{name: strings.TrimPrefix(trimSuffixProcs(f[0]), "Benchmark")}
			for i := 2; i+1 < len(f); i += 2 {
				if f[i+1] == "ns/op" && f[1] == "1" { // one iteration: ns/op is the whole run's time, not a figure
					continue
				}
				b.metrics = append(b.metrics, f[i]+" "+f[i+1])
			}
			out = append(out, b)
			cur = b
		case cur != nil && strings.HasPrefix(line, "    ") && trimmed != "":
			// "    bench_test.go:99: 50 turns in …": drop the file:line prefix.
			if _, rest, ok := strings.Cut(trimmed, ": "); ok && strings.Contains(trimmed[:len(trimmed)-len(rest)], ".go:") {
				trimmed = rest
			}
			cur.notes = append(cur.notes, trimmed)
		case trimmed == "PASS", strings.HasPrefix(trimmed, "ok "), strings.HasPrefix(trimmed, "FAIL"):
			cur = nil
		}
	}
	return out, header, sc.Err()
}

func trimSuffixProcs(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		return name[:i]
	}
	return name
}

func write(w io.Writer, benches []*bench, header map[string]string, command string) {
	fmt.Fprintf(w, "# Benchmarks\n\nWritten by `%s` on %s. Machine: %s, %s/%s, %d CPUs (GOMAXPROCS %d), %s.\n\n",
		command, time.Now().UTC().Format("2006-01-02 15:04 MST"), orUnknown(header["cpu"]), orUnknown(header["goos"]),
		orUnknown(header["goarch"]), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	fmt.Fprintln(w, "The end-to-end benchmarks run the real gateway and worker against the embedded Temporal server (SQLite,")
	fmt.Fprintln(w, "as `lucy dev` runs it) with the local Slack workspace and a fake model that answers at once unless")
	fmt.Fprintln(w, "said otherwise; everything shares the machine's CPUs. They print figures and never fail on speed.")
	fmt.Fprintln(w, "The first table puts each speed target beside the figure this run measured for it on `lucy dev`")
	fmt.Fprintln(w, "and on the cluster of e2e/cluster (PostgreSQL; \"not run\" without it, \"—\" where no cluster")
	fmt.Fprintln(w, "benchmark measures it).")
	fmt.Fprintln(w)
	fmt.Fprint(w, reading)
	writeTargets(w, benches)
	fmt.Fprintln(w, "| benchmark | figures |")
	fmt.Fprintln(w, "| --- | --- |")
	for _, b := range benches {
		fmt.Fprintf(w, "| %s | %s |\n", b.name, strings.Join(b.metrics, ", "))
	}
	for _, b := range benches {
		if len(b.notes) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n## %s\n\n", b.name)
		for _, n := range b.notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// target is one of Lucy's speed targets: the figure a benchmark reports (metric, its unit as
// ReportMetric named it) on `lucy dev` (bench) and on the cluster of e2e/cluster (cluster, when
// there is one), and the bound it must stay within.
type target struct {
	what           string
	bench, cluster string
	metric         string
	atMost         bool // the figure must be ≤ bound (else ≥)
	bound          float64
}

// targets are the speed and memory targets, in the order the report lists them.
var targets = []target{
	{"Orchestration per turn, instant model", "TurnOverhead", "ClusterTurnOverhead", "ms/turn", true, 12},
	{"Orchestration share of a turn, 500 ms model", "TurnOverheadSlowModel", "", "%overhead", true, 2},
	{"New conversations answered end to end", "ConversationsPerSecond", "ClusterConversationsPerSecond", "conversations/s", false, 40},
	{"First sign of life p99 (event to status or placeholder), 20 conversations/s", "FirstSignOfLife", "", "sign-p99-ms", true, 300},
	{"First streamed token to text visible in Slack, p99", "FirstSignOfLife", "", "token-visible-p99-ms", true, 500},
	{"Ack p99, worst 10 s window at 100 events/s", "AckLatency", "", "ack-p99-worst-10s-ms", true, 100},
	{"Acknowledged events lost", "AckLatency", "", "lost", true, 0},
	{"Acknowledged events duplicated", "AckLatency", "", "duplicated", true, 0},
	{"Steady state (a week of a busy team built on the stack): conversations answered end to end", "SteadyState", "", "conversations/s", false, 40},
	{"Steady state: conversations/s, share of the fresh stack's", "SteadyState", "", "%of-fresh-rate", false, 90},
	{"Steady state: first sign of life p99, share of the fresh stack's", "SteadyState", "", "%of-fresh-sign-p99", true, 110},
	{"Steady state: ack p99, share of the fresh stack's", "SteadyState", "", "%of-fresh-ack-p99", true, 110},
	{"Burst: new threads at 100/s answered at a share of the rate at 20/s", "Burst", "", "%burst-ratio", false, 80},
	{"Worker memory per idle lane (the worker's share of the process's heap in use)", "IdleLanesAndActiveRuns", "", "worker-KB/idle-lane", true, 100},
	{"RedactCredentials on a Slack thread with keys", "RedactCredentials/slack-thread-with-keys", "", "MB/s", false, 100},
	{"RedactCredentials on a JSON tool result with keys", "RedactCredentials/json-result-with-keys", "", "MB/s", false, 100},
	{"Kept after an OpenAPI resolve: GitHub's 13 MB description's tags", "ResolveRetained/tags", "", "retained-MiB", true, 64},
	{"Kept after an OpenAPI resolve: a tag of it connected, its services cached", "ResolveRetained/issues", "", "retained-MiB", true, 64},
	{"Kept after an OpenAPI resolve: the same description as YAML", "ResolveRetained/yaml-tags", "", "retained-MiB", true, 64},
	{"Kept after a PDF read", "ExtractPDFRetained", "", "retained-MiB", true, 64},
	{"Kept after a browser page", "BrowseRetained", "", "retained-MiB", true, 64},
	{"Kept after an MCP listing, its session and list cached", "ListingRetained", "", "retained-MiB", true, 64},
}

// writeTargets writes each target beside the figure the run measured for it, on `lucy dev` and on
// the cluster: "met" or "missed", or "not run" when the input has no such figure (the cluster's
// benchmarks skip without PostgreSQL; a run may pick some benchmarks only).
func writeTargets(w io.Writer, benches []*bench) {
	fmt.Fprintln(w, "| target | bound | `lucy dev` | cluster |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	for _, t := range targets {
		op := "≥"
		if t.atMost {
			op = "≤"
		}
		fmt.Fprintf(w, "| %s | %s %s %s | %s | %s |\n", t.what, op, strconv.FormatFloat(t.bound, 'f', -1, 64), t.metric,
			t.judge(benches, t.bench), t.judge(benches, t.cluster))
	}
	fmt.Fprintln(w)
}

// judge is the figure of t in the named benchmark's results and whether it meets t.
func (t target) judge(benches []*bench, name string) string {
	if name == "" {
		return "—"
	}
	for _, b := range benches {
		if b.name != name {
			continue
		}
		for _, m := range b.metrics {
			v, unit, _ := strings.Cut(m, " ")
			f, err := strconv.ParseFloat(v, 64)
			if unit != t.metric || err != nil {
				continue
			}
			verdict := "met"
			if t.atMost && f > t.bound || !t.atMost && f < t.bound {
				verdict = "missed"
			}
			return fmt.Sprintf("%s (%s)", v, verdict)
		}
	}
	return "not run"
}

// reading is how to read the figures of `lucy dev` (it was the README's first section, before the
// README became a front door): what the run set and what the server's cost is made of. It holds no
// figure, so it stays true when a run writes new ones below.
const reading = `## Reading the figures

What ` + "`lucy dev`" + ` carries: new conversations a second answered end to end, orchestration per turn (with an
instant and a 500 ms model), the first sign of life in the thread (the status line) after the event and the
first streamed words after the model writes them (99th percentiles, at 20 conversations a second), and
Slack's events acknowledged at 100 a second for 5 minutes (99th percentile, and in the worst 10 s), none
lost, none twice. That rate is more than the machine answers: when the run's wait ends, events are still
queued in their lanes (the AckLatency row counts them), and the outbox has handed every acknowledged event
to its thread. An idle thread's cost is given for the worker's memory and for the whole process's (with the
embedded server and the benchmark's fakes). For these figures ` + "`lucy dev`" + ` sets its garbage collector's target
to 150 unless ` + "`GOGC`" + ` is set (a trade of memory for CPU: ` + "`devserver/gc.go`" + `), and tunes its server's SQLite
files ([` + "`architecture.md`" + `](architecture.md), "The embedded server's settings"). Its server keeps
everything in SQLite on one machine: for a team's daily use, or more than one worker, run a Temporal
cluster ([` + "`deploy/`" + `](../deploy/)). What a conversation costs it is mostly the server's: each workflow
task and activity completion is a SQLite transaction, and each search-attribute upsert a visibility
write (the dearest write there is). So a turn and a conversation are built to need few of them
([` + "`architecture.md`" + `](architecture.md), "A lean turn"): quick tools and the system prompt run
inside the workflow task that needs them, the run's opening and finishing steps (the placeholder,
the delivery, the memory step) run inside the workflow tasks around its model call, a
conversation is five workflow tasks and one activity (the model call), and a new lane or run
records one version marker for all the change IDs before it (` + "`workflows/versions.go`" + `).

What a tool call costs the worker's memory: a *Retained benchmark (` + "`tooltest.ReportRetained`" + `) counts the
live heap (HeapAlloc after two garbage collections) before its first call and 200 ms after its last call
returned and its result was dropped. retained-MiB is the difference, what the worker keeps, its caches
included (the OpenAPI services read again for the next run, an MCP session and its cached list); a call
that leaked would grow it with the number of calls. peak-MiB is the most heap in use while the calls ran,
sampled every 5 ms, above the heap in use before; held-MiB is the heap the Go runtime holds from the
operating system right after the last call (HeapSys less HeapReleased) above what it held before: what
the worker's resident memory shows until the runtime's scavenger gives it back. RedactCredentials runs on
every model reply and tool result: RedactWithRegexps is its four regular expressions over the whole text,
as it read before, on the same texts (a Slack thread and an API's JSON list, about 1 MB each, with keys).

`
