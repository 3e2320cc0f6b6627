// Package metrics is Lucy's Prometheus registry: the Temporal SDK's metrics and Lucy's own, served
// together on /metrics.
//
// Three kinds of code count things, each in the way that is right for it:
//
//   - Workflow code (runs, turns, loop detections, escalations, compactions, approvals,
//     cancellations, dedupe hits) counts through workflow.GetMetricsHandler, never through the
//     collectors here: the SDK drops what a handler records while a workflow replays, so a worker
//     that replays a week-old lane does not count its runs again. The SDK's handler is a tally scope
//     (TemporalHandler) that reports into the same Prometheus registry. Names are the Workflow*
//     constants below.
//   - Activities (tool calls, model tokens and cost) run once per attempt and never replay, so they
//     use the Prometheus collectors directly.
//   - The gateway (events, hand-off latency) likewise.
//
// Every method is safe on a nil *Metrics, so tests and tools that build activities or a gateway
// without a registry need none.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"
)

// Names of the counters workflow code emits through workflow.GetMetricsHandler. The SDK's handler
// adds the workflow's tags (namespace, task_queue, workflow_type); the tags named here come on top.
// The tally bridge appends "_total" to a counter's name, so these already end in it.
const (
	// WorkflowRuns counts finished agent runs and sub-agents by outcome: completed, partial,
	// waiting (a question to the person), failed, cancelled, refused (a used-up spend budget). Tag: outcome.
	WorkflowRuns = "lucy_runs_total"
	// WorkflowTurns counts model turns of the agent loop (one per CallModel the loop makes).
	WorkflowTurns = "lucy_turns_total"
	// WorkflowLoopDetections counts the loop detector firing. Tag: level (the ladder's rung).
	WorkflowLoopDetections = "lucy_loop_detections_total"
	// WorkflowEscalations counts model tier escalations. Tag: trigger.
	WorkflowEscalations = "lucy_escalations_total"
	// WorkflowCompactions counts context compactions and recovery stages. Tag: stage (R1, R2, R3).
	WorkflowCompactions = "lucy_compactions_total"
	// WorkflowApprovals counts approval prompts and their outcome. Tag: decision (requested,
	// approved, denied, expired, refused).
	WorkflowApprovals = "lucy_approvals_total"
	// WorkflowCancellations counts runs stopped by "cancel that" (or the lane's cancel signal).
	WorkflowCancellations = "lucy_cancellations_total"
	// WorkflowDedupeHits counts events a lane had already seen (Slack retries, the app_mention and
	// message pair of one @mention). Tag: kind (message, cancel, approval, feedback).
	WorkflowDedupeHits = "lucy_dedupe_hits_total"
	// WorkflowFeedback counts the 👍/👎 votes on answers, one per person per answer. Tag: value (up,
	// down).
	WorkflowFeedback = "lucy_feedback_total"
)

// reportEvery is how often the tally scope flushes the SDK's and the workflows' metrics into the
// Prometheus registry: a scrape sees a workflow's counter at most this late.
const reportEvery = time.Second

// Metrics is one process's registry. Build one per process (or per test) with New: collectors are
// not global, so that several workers and gateways in one test binary do not share counts.
type Metrics struct {
	reg   *prometheus.Registry
	scope tally.Scope
	close func()

	gatewayEvents *prometheus.CounterVec
	handoff       prometheus.Histogram
	toolCalls     *prometheus.CounterVec
	modelCalls    *prometheus.CounterVec
	tokens        *prometheus.CounterVec
	cost          *prometheus.CounterVec
	historyRead   *prometheus.CounterVec
}

// New builds a registry with the Go runtime and process collectors, Lucy's collectors and the tally
// scope behind TemporalHandler. version labels lucy_build_info. log receives registration errors
// of the SDK's metrics (logged, never a panic: a metric is not worth a crashed worker).
func New(version string, log zerolog.Logger) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{reg: reg}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "lucy_build_info", Help: "Always 1; the version label is the binary's version.",
	}, []string{"version"})
	build.WithLabelValues(version).Set(1)
	m.gatewayEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lucy_gateway_events_total",
		Help: "Slack events and interactions the gateway received, by type and outcome.",
	}, []string{"type", "outcome"})
	m.handoff = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "lucy_gateway_handoff_seconds",
		Help: "Time to hand an event durably to Temporal, which is what Slack's acknowledgement waits for.",
		// Slack retries after 3 s; the gateway gives a hand-off 2.5 s.
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	})
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lucy_tool_calls_total",
		Help: "Tool executions (activity attempts) by tool and outcome: ok, error (an error result the model reads), needs_approval (nothing done: the person is asked), failed (the activity failed).",
	}, []string{"tool", "outcome"})
	m.modelCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lucy_model_calls_total",
		Help: "Calls to the model provider by model and outcome (ok, error).",
	}, []string{"model", "outcome"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lucy_model_tokens_total",
		Help: "Tokens the provider reported, by model and kind (prompt, completion).",
	}, []string{"model", "kind"})
	m.cost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lucy_model_cost_usd_total",
		Help: "Estimated cost in US dollars from Lucy's list prices, by model; models not in the list are not counted.",
	}, []string{"model"})
	m.historyRead = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lucy_history_read_total",
		Help: "What activities read of their run's history to resolve transcript references, by unit (events, bytes); the per-worker cache keeps it to what is new since the last read.",
	}, []string{"unit"})
	reg.MustRegister(build, m.gatewayEvents, m.handoff, m.toolCalls, m.modelCalls, m.tokens, m.cost, m.historyRead)

	reporter := tallyprom.NewReporter(tallyprom.Options{
		Registerer: reg,
		// Timers (the SDK's latencies) as histograms: summaries cannot be aggregated across workers.
		DefaultTimerType: tallyprom.HistogramTimerType,
		OnRegisterError: func(err error) {
			log.Warn().Err(err).Msg("metrics: a Temporal SDK metric could not be registered")
		},
	})
	// The options of the Temporal samples ("metrics"): names and tag values sanitized to what
	// Prometheus accepts, "_" as the separator, and the Prometheus naming conventions (_total,
	// _seconds) added by NewPrometheusNamingScope.
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:  reporter,
		Separator:       tallyprom.DefaultSeparator,
		SanitizeOptions: &sdktally.PrometheusSanitizeOptions,
	}, reportEvery)
	m.scope = sdktally.NewPrometheusNamingScope(scope)
	m.close = func() { _ = closer.Close() }
	return m
}

// TemporalHandler is the handler for client.Options.MetricsHandler (and testsuite's
// SetMetricsHandler): the SDK's metrics and what workflows count reach the Prometheus registry
// through it.
func (m *Metrics) TemporalHandler() client.MetricsHandler {
	if m == nil {
		return client.MetricsNopHandler
	}
	return sdktally.NewMetricsHandler(m.scope)
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry is the Prometheus registry, for tests and for collectors of other packages.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// Close flushes the tally scope one last time and stops its reporting loop.
func (m *Metrics) Close() {
	if m != nil && m.close != nil {
		m.close()
	}
}

// GatewayEvent counts one Slack event or interaction.
func (m *Metrics) GatewayEvent(typ, outcome string) {
	if m == nil {
		return
	}
	m.gatewayEvents.WithLabelValues(typ, outcome).Inc()
}

// Handoff records the time one hand-off to Temporal took.
func (m *Metrics) Handoff(d time.Duration) {
	if m == nil {
		return
	}
	m.handoff.Observe(d.Seconds())
}

// Tool outcomes of lucy_tool_calls_total.
const (
	ToolOK     = "ok"     // the tool returned a result
	ToolError  = "error"  // the tool returned an error result, which the model reads
	ToolFailed = "failed" // the activity failed (bad arguments, transient or permanent failure)
	// ToolNeedsApproval: the tool did nothing and asks for the person's approval first.
	ToolNeedsApproval = "needs_approval"
)

// ToolCall counts one tool execution.
func (m *Metrics) ToolCall(tool, outcome string) {
	if m == nil {
		return
	}
	m.toolCalls.WithLabelValues(tool, outcome).Inc()
}

// HistoryRead counts history events (and their bytes) read to resolve transcript references.
func (m *Metrics) HistoryRead(events, bytes int) {
	if m == nil {
		return
	}
	m.historyRead.WithLabelValues("events").Add(float64(events))
	m.historyRead.WithLabelValues("bytes").Add(float64(bytes))
}

// ModelCall counts one call to the provider and, when it answered, its tokens and estimated cost.
func (m *Metrics) ModelCall(model string, err error, prompt, completion int64) {
	if m == nil {
		return
	}
	if err != nil {
		m.modelCalls.WithLabelValues(model, "error").Inc()
		return
	}
	m.modelCalls.WithLabelValues(model, "ok").Inc()
	m.tokens.WithLabelValues(model, "prompt").Add(float64(max(prompt, 0)))
	m.tokens.WithLabelValues(model, "completion").Add(float64(max(completion, 0)))
	if usd, ok := EstimateCost(model, prompt, completion); ok {
		m.cost.WithLabelValues(model).Add(usd)
	}
}
