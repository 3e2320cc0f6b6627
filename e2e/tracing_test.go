package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/tracing"
)

// otlpSpan is what the receiver keeps of a span.
type otlpSpan struct {
	name, trace, id, parent, service string
}

// otlpReceiver is an OTLP/HTTP traces endpoint: it decodes each ExportTraceServiceRequest.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []otlpSpan
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not OTLP/HTTP protobuf traces", http.StatusBadRequest)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, _ := io.ReadAll(body)
	var er collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &er); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range er.GetResourceSpans() {
		svc := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				svc = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, otlpSpan{name: s.GetName(), trace: hex.EncodeToString(s.GetTraceId()),
					id: hex.EncodeToString(s.GetSpanId()), parent: hex.EncodeToString(s.GetParentSpanId()), service: svc})
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = io.Copy(w, bytes.NewReader(out))
}

func (r *otlpReceiver) all() []otlpSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]otlpSpan(nil), r.spans...)
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, a Slack event's hand-off in the gateway, the lane it
// starts, the agent run and the run's activities (the model call, the Slack posts) reach an
// OTLP/HTTP collector as spans of one trace.
func TestTracingOneTraceFromSlackEventToActivities(t *testing.T) {
	rcv := &otlpReceiver{}
	collector := httptest.NewServer(rcv)
	t.Cleanup(collector.Close)
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "OTEL_SERVICE_NAME": "lucy-e2e"}
	tr, err := tracing.Setup(context.Background(), func(k string) string { return env[k] }, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Interceptors) == 0 {
		t.Fatal("tracing is off with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })

	s := newStackOpts(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "**4**, of course."} },
		stackOptions{interceptors: tr.Interceptors})
	ts := s.say("<@ULUCY> what is 2+2?", "")
	if resp := s.event("app_mention", "EvTrace1", "<@ULUCY> what is 2+2?", ts, "", human); resp.StatusCode != http.StatusOK {
		t.Fatalf("gateway answered %d", resp.StatusCode)
	}
	s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(ts, "*4*, of course.") })

	// The lane's own RunWorkflow span ends when the lane does (after a week idle), so it is not
	// exported yet; its work is (HandleSignal, StartChildWorkflow, its activities).
	want := []string{"lucy.handoff.message", "SignalWithStartWorkflow:lane", "HandleSignal:message", "StartChildWorkflow:agent_run",
		"RunWorkflow:agent_run", "StartActivity:CallModel", "RunActivity:CallModel", "RunActivity:DeliverAnswer"}
	var inTrace map[string]bool
	var spans []otlpSpan
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := tr.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
		spans = rcv.all()
		root := ""
		for _, sp := range spans {
			if sp.name == "lucy.handoff.message" {
				root = sp.trace
			}
		}
		inTrace = map[string]bool{}
		for _, sp := range spans {
			if root != "" && sp.trace == root {
				inTrace[sp.name] = true
			}
		}
		missing := 0
		for _, n := range want {
			if !inTrace[n] {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			var names []string
			for n := range inTrace {
				names = append(names, n)
			}
			sort.Strings(names)
			t.Fatalf("the hand-off's trace has %v; want all of %v (%d spans received)", names, want, len(spans))
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, sp := range spans {
		if sp.service != "lucy-e2e" {
			t.Errorf("span %s has service.name %q", sp.name, sp.service)
			break
		}
	}
	var names []string
	for n := range inTrace {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("%d spans received; the hand-off's trace: %s", len(spans), strings.Join(names, ", "))
}
