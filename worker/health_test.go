package worker

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/devserver"
	"github.com/lucy-agent/lucy/metrics"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// The worker's endpoints against a real Temporal server: /healthz always, /readyz only while the
// worker polls, /metrics with the SDK's metrics and Lucy's on one registry.
func TestWorkerOpsEndpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{DataDir: t.TempDir(), FrontendPort: freePort(t), UIPort: freePort(t), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()

	m := metrics.New("test", zerolog.New(zerolog.NewTestWriter(t))) // registration errors show
	defer m.Close()
	health := NewHealth()
	ops := httptest.NewServer(OpsHandler(health, m, zerolog.Nop()))
	defer ops.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(ops.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d before the worker exists, want 200", code)
	}
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d before the worker exists, want 503", code)
	}

	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddress(), MetricsHandler: m.TemporalHandler(), Logger: discardLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	acts := NewActivities(Deps{Config: &config.Config{DataDir: t.TempDir()}, Client: c, Log: zerolog.Nop(), Metrics: m})
	w := health.NewWorker(c, acts, Sizing{EmbeddedServer: true})
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d before the worker started, want 503", code)
	}
	if err := health.Start(w); err != nil {
		t.Fatal(err)
	}
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz = %d %q with the worker polling, want 200", code, body)
	}
	m.ToolCall("lucy_web_fetch", metrics.ToolOK) // what ExecuteTool counts, on the same registry

	// The SDK reports its pollers and requests through the tally scope, flushed every second.
	want := []string{"temporal_request_total", "temporal_num_pollers", "lucy_build_info", "lucy_tool_calls_total", "go_goroutines"}
	var body string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		_, body = get("/metrics")
		missing := false
		for _, name := range want {
			if !strings.Contains(body, "\n"+name) {
				missing = true
			}
		}
		if !missing {
			break
		}
	}
	for _, name := range want {
		if !strings.Contains(body, "\n"+name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}

	health.Stop(w)
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d after the worker stopped, want 503", code)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d after the worker stopped, want 200", code)
	}
}

// Ready follows the worker's state: not ready before Start, ready once polling (Temporal is asked
// only when there is a client, which TestWorkerOpsEndpoints covers).
func TestReadyNeedsTemporal(t *testing.T) {
	h := NewHealth()
	h.set(nil) // polling, as after Start
	if err := h.Ready(context.Background()); err != nil {
		t.Errorf("Ready = %v with no client to ask, want nil", err)
	}
	if err := NewHealth().Ready(context.Background()); err == nil {
		t.Error("Ready = nil before Start")
	}
}

type discardLogger struct{}

func (discardLogger) Debug(string, ...any) {}
func (discardLogger) Info(string, ...any)  {}
func (discardLogger) Warn(string, ...any)  {}
func (discardLogger) Error(string, ...any) {}
