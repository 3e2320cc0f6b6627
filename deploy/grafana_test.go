package deploy

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	serverlog "go.temporal.io/server/common/log"
	servermetrics "go.temporal.io/server/common/metrics"

	"github.com/lucy-agent/lucy/metrics"
)

// The Grafana dashboard (grafana/lucy.json) must not point at nothing: every metric its queries
// read is one a process exports under exactly that name. The names are not listed by hand here:
// each source's metrics are recorded through that source's own exporter and the exposed names
// gathered, so a rename in Lucy, a different suffix convention in the SDK's Prometheus bridge, or a
// metric the server does not define fails the test.

// dashboardQueries returns every PromQL expression of the dashboard (panel targets, rows' nested
// panels) and every template variable's query, with where it is.
func dashboardQueries(t *testing.T, data []byte) map[string]string {
	t.Helper()
	var d struct {
		UID        string            `json:"uid"`
		Title      string            `json:"title"`
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("grafana/lucy.json is not JSON: %v", err)
	}
	if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard uid %q title %q with %d panels", d.UID, d.Title, len(d.Panels))
	}
	out := map[string]string{}
	type panel struct {
		Title   string            `json:"title"`
		Type    string            `json:"type"`
		Panels  []json.RawMessage `json:"panels"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	}
	var walk func(raws []json.RawMessage)
	walk = func(raws []json.RawMessage) {
		for _, raw := range raws {
			var p panel
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatal(err)
			}
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("panel %q query %s is empty", p.Title, tg.RefID)
				}
				out[fmt.Sprintf("panel %q query %s", p.Title, tg.RefID)] = tg.Expr
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		switch q := v.Query.(type) {
		case string:
			out["variable "+v.Name] = q
		case map[string]any:
			s, _ := q["query"].(string)
			out["variable "+v.Name] = s
		}
	}
	return out
}

var (
	promString     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promMatchers   = regexp.MustCompile(`\{[^{}]*\}`)
	promRange      = regexp.MustCompile(`\[[^\[\]]*\]`)
	promGrouping   = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promIdentifier = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	// label_values(metric, label): Grafana's Prometheus template query
	// (https://grafana.com/docs/grafana/latest/datasources/prometheus/template-variables/).
	labelValues = regexp.MustCompile(`^\s*label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*,\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$`)
)

// promKeywords are PromQL's operators and keywords that look like identifiers
// (https://prometheus.io/docs/prometheus/latest/querying/operators/).
var promKeywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}

// promMetrics returns the metric names a PromQL expression selects: what is left once strings,
// label matchers, range selectors and groupings are removed, minus function calls (an identifier
// followed by "("), keywords, numbers and Grafana variables ($__rate_interval, $job).
func promMetrics(expr string) []string {
	if m := labelValues.FindStringSubmatch(expr); m != nil {
		return []string{m[1]}
	}
	s := promString.ReplaceAllString(expr, `""`)
	s = promMatchers.ReplaceAllString(s, " ")
	s = promRange.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range promIdentifier.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		if loc[0] > 0 && (s[loc[0]-1] == '$' || s[loc[0]-1] == '.' || (s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9')) {
			continue // a variable, or part of a number (1e-9)
		}
		rest := strings.TrimLeft(s[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") || slices.Contains(promKeywords, strings.ToLower(name)) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// seriesNames expands a family's name to the series names Prometheus stores for it: a histogram's
// _bucket, _sum and _count (https://prometheus.io/docs/concepts/metric_types/#histogram).
func seriesNames(name, typ string) []string {
	if strings.EqualFold(typ, "histogram") {
		return []string{name + "_bucket", name + "_sum", name + "_count"}
	}
	return []string{name}
}

// lucyExported records every metric Lucy exports once (the collectors through their methods, the
// workflow counters through the SDK handler as workflow code does) and returns the series names
// its /metrics then shows.
func lucyExported(t *testing.T, sdkMetrics []sdkMetric) map[string]string {
	t.Helper()
	m := metrics.New("test", zerolog.Nop())
	m.GatewayEvent("message", "ok")
	m.Handoff(time.Millisecond)
	m.ToolCall("lucy_read_file", metrics.ToolOK)
	m.HistoryRead(1, 1)
	m.ModelCall("gpt-4o-mini", nil, 10, 10)
	m.ModelCall("gpt-4o-mini", errors.New("x"), 0, 0)
	h := m.TemporalHandler()
	for _, name := range []string{metrics.WorkflowRuns, metrics.WorkflowTurns, metrics.WorkflowLoopDetections,
		metrics.WorkflowEscalations, metrics.WorkflowCompactions, metrics.WorkflowApprovals,
		metrics.WorkflowCancellations, metrics.WorkflowDedupeHits, metrics.WorkflowFeedback} {
		h.Counter(name).Inc(1)
	}
	// The SDK's own metrics go through the same handler the SDK is given
	// (client.Options.MetricsHandler), so their exposed names are what the bridge makes of them.
	for _, s := range sdkMetrics {
		switch s.kind {
		case "counter":
			h.Counter(s.name).Inc(1)
		case "timer":
			h.Timer(s.name).Record(time.Second)
		case "gauge":
			h.Gauge(s.name).Update(1)
		}
	}
	m.Close() // flushes the tally scope into the registry
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range fams {
		for _, n := range seriesNames(f.GetName(), f.GetType().String()) {
			out[n] = "Lucy's /metrics (metrics.New)"
		}
	}
	return out
}

// sdkMetric is a metric of the Temporal Go SDK the dashboard reads. Names are the SDK's
// (go.temporal.io/sdk internal/common/metrics/constants.go, checked against that file below); the
// kind is how the SDK records it (a *Latency is a timer, the slot and poller counts are gauges).
type sdkMetric struct{ name, kind string }

var dashboardSDKMetrics = []sdkMetric{
	{"temporal_workflow_task_schedule_to_start_latency", "timer"},
	{"temporal_activity_schedule_to_start_latency", "timer"},
	{"temporal_activity_execution_latency", "timer"},
	{"temporal_request_latency", "timer"},
	{"temporal_request_failure", "counter"},
	{"temporal_request_resource_exhausted", "counter"},
	{"temporal_workflow_task_execution_failed", "counter"},
	{"temporal_activity_execution_failed", "counter"},
	{"temporal_worker_task_slots_available", "gauge"},
	{"temporal_worker_task_slots_used", "gauge"},
}

// checkSDKNames checks that each name is one the SDK of this build defines.
func checkSDKNames(t *testing.T) {
	t.Helper()
	f, err := os.Open(filepath.Join(moduleDir(t, "go.temporal.io/sdk"), "internal", "common", "metrics", "constants.go"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Constants are TemporalMetricsPrefix + "name" or another constant + "_suffix".
	consts := map[string]string{"TemporalMetricsPrefix": "temporal_"}
	re := regexp.MustCompile(`^\s*(\w+)\s*=\s*(\w+)\s*\+\s*"([^"]+)"`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			if base, ok := consts[m[2]]; ok {
				consts[m[1]] = base + m[3]
			}
		}
	}
	defined := map[string]bool{}
	for _, v := range consts {
		defined[v] = true
	}
	for _, s := range dashboardSDKMetrics {
		if !defined[s.name] {
			t.Errorf("%s is not a metric of the Temporal Go SDK (internal/common/metrics/constants.go)", s.name)
		}
	}
}

// serverExported records the server metrics the dashboard reads through the Temporal server's own
// metrics handler, configured as the server image configures it when PROMETHEUS_ENDPOINT is set
// (common/config/config_template_embedded.yaml: prometheus, timerType histogram; tally, the
// default framework), and returns the series names its /metrics shows.
func serverExported(t *testing.T) map[string]string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logger := serverlog.NewNoopLogger()
	h, err := servermetrics.MetricsHandlerFromConfig(logger, &servermetrics.Config{
		Prometheus: &servermetrics.PrometheusConfig{TimerType: "histogram", ListenAddress: addr},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop(logger)
	// The server metrics of the dashboard, by their definitions in common/metrics/metric_defs.go.
	servermetrics.ServiceRequests.With(h).Record(1)
	servermetrics.ServiceFailures.With(h).Record(1)
	servermetrics.ServiceLatency.With(h).Record(time.Second)
	servermetrics.PersistenceLatency.With(h).Record(time.Second)
	servermetrics.TaskScheduleToStartLatency.With(h).Record(time.Second)
	servermetrics.ApproximateBacklogCount.With(h).Record(1)
	servermetrics.ApproximateBacklogAgeSeconds.With(h).Record(1)
	want := 7
	out := map[string]string{}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			out = map[string]string{}
			n := 0
			for _, line := range strings.Split(string(body), "\n") {
				// "# TYPE name type": the text exposition format
				// (https://prometheus.io/docs/instrumenting/exposition_formats/#comments-help-text-and-type-information).
				f := strings.Fields(line)
				if len(f) == 4 && f[0] == "#" && f[1] == "TYPE" && !strings.HasPrefix(f[2], "go_") && !strings.HasPrefix(f[2], "process_") && !strings.HasPrefix(f[2], "tally_") {
					n++
					for _, s := range seriesNames(f[2], f[3]) {
						out[s] = "the Temporal server's /metrics (common/metrics)"
					}
				}
			}
			if n >= want {
				return out
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's metrics handler exposed %d of %d metrics: %v", len(out), want, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// unknownMetrics returns, sorted, every metric a query reads that no source exports.
func unknownMetrics(queries map[string]string, known map[string]string) []error {
	var errs []error
	for where, q := range queries {
		names := promMetrics(q)
		if len(names) == 0 {
			errs = append(errs, fmt.Errorf("%s reads no metric: %s", where, q))
		}
		for _, n := range names {
			if _, ok := known[n]; !ok {
				errs = append(errs, fmt.Errorf("%s reads %s, which neither Lucy, the Temporal SDK nor the Temporal server exports", where, n))
			}
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
}

func knownMetrics(t *testing.T) map[string]string {
	t.Helper()
	checkSDKNames(t)
	known := lucyExported(t, dashboardSDKMetrics)
	for k, v := range serverExported(t) {
		known[k] = v
	}
	return known
}

func TestGrafanaDashboardMetricsExist(t *testing.T) {
	data, err := os.ReadFile("grafana/lucy.json")
	if err != nil {
		t.Fatal(err)
	}
	queries := dashboardQueries(t, data)
	known := knownMetrics(t)
	failAll(t, unknownMetrics(queries, known))
	// What the issue asks the dashboard to show is there: runs, latency, errors, spend, queue depth.
	used := map[string]bool{}
	for _, q := range queries {
		for _, n := range promMetrics(q) {
			used[n] = true
		}
	}
	for _, want := range []string{"lucy_runs_total", "lucy_gateway_handoff_seconds_bucket", "lucy_model_calls_total",
		"lucy_model_cost_usd_total", "lucy_model_tokens_total", "approximate_backlog_count",
		"temporal_activity_schedule_to_start_latency_seconds_bucket", "temporal_request_latency_seconds_bucket"} {
		if !used[want] {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
}

// The check finds what it must: a misspelt metric, a suffix the exporter does not add, a metric
// only in a template variable; and does not mistake functions, labels or variables for metrics.
func TestGrafanaCheckCatchesMistakes(t *testing.T) {
	got := promMetrics(`histogram_quantile(0.95, sum by (le, activity_type) (rate(temporal_activity_execution_latency_seconds_bucket{job=~"$job",activity_type="CallModel"}[$__rate_interval]))) / on(job) group_left lucy_build_info * 1e-9`)
	if want := []string{"temporal_activity_execution_latency_seconds_bucket", "lucy_build_info"}; !slices.Equal(got, want) {
		t.Errorf("promMetrics: %v, want %v", got, want)
	}
	if got := promMetrics(`label_values(service_requests, job)`); !slices.Equal(got, []string{"service_requests"}) {
		t.Errorf("label_values: %v", got)
	}
	known := knownMetrics(t)
	for _, bad := range []string{
		`sum(rate(lucy_run_total[5m]))`,                                       // misspelt
		`sum(rate(temporal_request_latency_bucket[5m]))`,                      // the SDK bridge adds _seconds
		`sum(rate(service_requests_total[5m]))`,                               // the server's tally reporter adds no _total
		`histogram_quantile(0.9, rate(lucy_model_cost_usd_total_bucket[5m]))`, // not a histogram
		`label_values(lucy_nothing, job)`,
	} {
		if errs := unknownMetrics(map[string]string{"q": bad}, known); len(errs) == 0 {
			t.Errorf("%s passed", bad)
		}
	}
	if errs := unknownMetrics(map[string]string{"q": `vector(1)`}, known); len(errs) == 0 {
		t.Error("a query reading no metric passed")
	}
}
