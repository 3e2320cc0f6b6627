package workflows

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/testsuite"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/metrics"
)

// harnessWithMetrics runs workflows with the SDK metrics handler of a real registry, the one the
// worker dials with, so that a count reaches Prometheus as it does in production.
func harnessWithMetrics(t *testing.T) (*harness, *metrics.Metrics) {
	m := metrics.New("test", zerolog.Nop())
	t.Cleanup(m.Close)
	return newHarnessWith(t, func(s *testsuite.WorkflowTestSuite) { s.SetMetricsHandler(m.TemporalHandler()) }), m
}

// waitForSeries waits until /metrics of the registry holds every line of want (the tally scope
// reports to Prometheus every second). The test environment's handler carries only the workflow's
// own tags; a real worker's adds namespace, task_queue and workflow_type.
func waitForSeries(t *testing.T, m *metrics.Metrics, want ...string) {
	t.Helper()
	var body string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		w := httptest.NewRecorder()
		m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		body = w.Body.String()
		missing := false
		for _, line := range want {
			if !strings.Contains(body, "\n"+line+"\n") {
				missing = true
			}
		}
		if !missing {
			return
		}
	}
	t.Fatalf("/metrics lacks one of %q:\n%s", want, body)
}

// An agent run with one tool call counts one completed run and two turns through the workflow's
// metrics handler.
func TestAgentRunCountsRunsAndTurns(t *testing.T) {
	h, m := harnessWithMetrics(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(toolCall("c1", "lucy_web_fetch", map[string]string{"url": "https://e.example"})), nil
		}
		return text("Here it is."), nil
	}
	if _, err := h.runAgent(runInput("fetch e.example for me")); err != nil {
		t.Fatal(err)
	}
	waitForSeries(t, m, `lucy_runs_total{outcome="completed"} 1`, "lucy_turns_total 2")
}

// A Slack retry and the message twin of an @mention are dedupe hits of the lane.
func TestLaneCountsDedupeHits(t *testing.T) {
	h, m := harnessWithMetrics(t)
	first := msg("100.1", "U1", "<@ULUCY> summarize the launch plan")
	first.Kind = "app_mention"
	double := first
	double.EventID, double.Kind = "EvOther", "message"
	h.runLane(first, signalAt(time.Second, SignalMessage, first), signalAt(2*time.Second, SignalMessage, double))
	waitForSeries(t, m, `lucy_dedupe_hits_total{kind="message"} 2`)
}
