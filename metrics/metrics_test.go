package metrics

import (
	"io"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(w.Body)
	return string(b)
}

// What workflows count through the SDK's handler reaches the same Prometheus registry as Lucy's
// direct collectors, under the names docs/operating.md documents.
func TestTemporalHandlerAndCollectorsShareTheRegistry(t *testing.T) {
	m := New("v1.2.3", zerolog.Nop())
	defer m.Close()
	m.TemporalHandler().WithTags(map[string]string{"outcome": "completed"}).Counter(WorkflowRuns).Inc(2)
	m.ToolCall("lucy_web_fetch", ToolOK)
	m.ModelCall("gpt-4.1", nil, 1000, 500)
	m.GatewayEvent("app_mention", "message")
	m.Handoff(30 * time.Millisecond)
	want := []string{
		`lucy_runs_total{outcome="completed"} 2`,
		`lucy_tool_calls_total{outcome="ok",tool="lucy_web_fetch"} 1`,
		`lucy_model_tokens_total{kind="prompt",model="gpt-4.1"} 1000`,
		`lucy_model_cost_usd_total{model="gpt-4.1"} 0.006`,
		`lucy_gateway_events_total{outcome="message",type="app_mention"} 1`,
		`lucy_gateway_handoff_seconds_count 1`,
		`lucy_build_info{version="v1.2.3"} 1`,
		"go_goroutines",
	}
	deadline := time.Now().Add(5 * time.Second) // the tally scope reports every second
	for {
		body := scrape(t, m)
		missing := ""
		for _, w := range want {
			if !strings.Contains(body, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %q:\n%s", missing, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestNilMetricsIsANoOp(t *testing.T) {
	var m *Metrics
	m.ToolCall("x", ToolOK)
	m.ModelCall("x", nil, 1, 1)
	m.GatewayEvent("x", "y")
	m.Handoff(time.Second)
	m.TemporalHandler().Counter(WorkflowTurns).Inc(1)
	m.Close()
}

func TestEstimateCost(t *testing.T) {
	for _, c := range []struct {
		model string
		usd   float64
		ok    bool
	}{
		{"gpt-4o-mini", 0.15 + 0.60, true},
		{"openai/gpt-4o-mini", 0.15 + 0.60, true},
		{"gpt-4o-2024-08-06", 2.5 + 10, true},
		{"google/gemini-2.5-flash:online", 0.30 + 2.50, true},
		{"o3-mini", 1.10 + 4.40, true},
		{"llama3.1", 0, false},
	} {
		usd, ok := EstimateCost(c.model, 1e6, 1e6)
		if ok != c.ok || math.Abs(usd-c.usd) > 1e-9 {
			t.Errorf("EstimateCost(%q) = %v, %v; want %v, %v", c.model, usd, ok, c.usd, c.ok)
		}
	}
}
