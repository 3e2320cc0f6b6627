package activities

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/tools"
)

// throttleSource offers one tool that GETs a service and returns its 429 or 503 with Retry-After
// as the integrations do (tools.NewThrottled).
type throttleSource struct{ url string }

func (s throttleSource) Tools(context.Context, string) ([]tools.Tool, error) {
	return []tools.Tool{{
		Spec: tools.Spec{Name: "svc_read", Description: "Reads the service.", Idempotent: true, Long: true,
			Parameters: map[string]any{"type": "object", "properties": map[string]any{}}},
		Run: func(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
			resp, err := http.Get(s.url)
			if err != nil {
				return tools.Output{}, err
			}
			defer resp.Body.Close()
			if th := tools.NewThrottled(inv.Name, "the service", resp.StatusCode, resp.Header, time.Now(), true); th != nil {
				return tools.Output{}, th
			}
			return tools.Output{Content: resp.Status}, nil
		},
	}}, nil
}

// A tool whose service answered 429 or 503 with Retry-After, in either form (RFC 9110 §10.2.3:
// delay-seconds or an HTTP-date), comes back from ExecuteTool as a result carrying the wait
// (ToolResult.RetryAfter) for the workflow to decide on, not as a failure the activity's retry
// policy would repeat at once; its Content reports the wait to a run that does not wait.
func TestExecuteToolRetryAfter(t *testing.T) {
	for _, c := range []struct {
		status int
		value  func() string
		min    time.Duration
		max    time.Duration
	}{
		{http.StatusTooManyRequests, func() string { return "3" }, 3 * time.Second, 3 * time.Second},
		{http.StatusServiceUnavailable, func() string { return "3" }, 3 * time.Second, 3 * time.Second},
		{http.StatusTooManyRequests, func() string { return time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat) }, 28 * time.Second, 31 * time.Second},
	} {
		var hits int
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits++
			w.Header().Set("Retry-After", c.value())
			w.WriteHeader(c.status)
		}))
		runner, err := tools.NewRunner(zerolog.Nop(), nil, throttleSource{srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		a := &Activities{Tools: runner, Log: zerolog.Nop()}
		out, err := executeTool(t, a, ExecuteToolInput{Name: "svc_read", Arguments: `{}`, Team: "T1"})
		srv.Close()
		if err != nil || out.RetryAfter == nil || !out.IsError || hits != 1 {
			t.Fatalf("%d: %+v %v (%d requests)", c.status, out, err, hits)
		}
		ra := out.RetryAfter
		if ra.Wait < c.min || ra.Wait > c.max || !ra.Safe || ra.Service != "the service" || ra.Status != fmt.Sprintf("HTTP %d", c.status) {
			t.Fatalf("%d: %+v", c.status, ra)
		}
		if out.Content == "" || out.Chars == 0 {
			t.Fatalf("no report for the model: %+v", out)
		}
	}
}
