package workflows

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/integrations/openapi"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

// limitedAPI is a connected service (an OpenAPI description and its API) that rate limits: its
// first `throttled` requests are answered with status and Retry-After (RFC 6585 §4: a 429 "MAY
// include a Retry-After header indicating how long to wait before making a new request"; RFC 9110
// §15.6.4: a 503 "MAY send a Retry-After header field … to suggest an appropriate amount of time
// for the client to wait"; the field's forms, RFC 9110 §10.2.3), the others served. It counts the
// requests that reach it, with the test environment's time of each.
type limitedAPI struct {
	srv       *httptest.Server
	mu        sync.Mutex
	status    int
	retry     string
	throttled int
	calls     map[string]int
}

const limitedSpec = `{"openapi": "3.0.3", "info": {"title": "Items", "version": "1"}, "servers": [{"url": "%s/v1"}],
  "paths": {"/items": {
    "get": {"operationId": "listItems", "responses": {"200": {"description": "the items"}}},
    "post": {"operationId": "createItem", "requestBody": {"required": true, "content": {"application/json":
      {"schema": {"type": "object", "properties": {"name": {"type": "string"}}}}}},
      "responses": {"201": {"description": "created"}}}}}}`

func (l *limitedAPI) count(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[key]
}

// newLimited connects the service for U1 (POST createItem named safe to run unasked: a write that
// needs no approval but is not idempotent) and returns the harness whose route is the real route
// over the real source and whose tool activity is the real one.
func newLimited(t *testing.T, status int, retry string, throttled int) (*harness, *limitedAPI) {
	l := &limitedAPI{status: status, retry: retry, throttled: throttled, calls: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, limitedSpec, l.srv.URL)
	})
	mux.HandleFunc("/v1/items", func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.calls[r.Method]++
		throttle := l.throttled > 0
		if throttle {
			l.throttled--
		}
		l.mu.Unlock()
		if throttle {
			w.Header().Set("Retry-After", l.retry)
			w.WriteHeader(l.status)
			fmt.Fprint(w, `{"error": "slow down"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"id": 1}`)
			return
		}
		fmt.Fprint(w, `[{"id": 1, "name": "first"}]`)
	})
	l.srv = httptest.NewServer(mux)
	t.Cleanup(l.srv.Close)

	custom := openapi.New(openapi.Deps{State: workspace.NewLocalAt(t.TempDir()), Hosts: tools.AllowAllPrivate(), Log: zerolog.Nop()})
	runner, err := tools.NewRunner(zerolog.Nop(), []any{custom}, custom)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	resolve := tools.Invocation{Name: openapi.ResolveTool, Team: "T1", User: "U1",
		Arguments: fmt.Sprintf(`{"url": %q, "name": "items", "safe": ["createItem"]}`, l.srv.URL+"/openapi.json")}
	out, err := runner.Run(ctx, resolve)
	if err != nil || out.NeedsApproval == nil {
		t.Fatalf("resolve did not ask for approval: %v %+v", err, out)
	}
	resolve.Approved, resolve.Guard = true, out.NeedsApproval.Guard
	if out, err = runner.Run(ctx, resolve); err != nil || out.IsError || out.NeedsApproval != nil {
		t.Fatalf("resolve: %v %+v", err, out)
	}
	acts := &activities.Activities{Tools: runner, Log: zerolog.Nop()}
	route, err := acts.Route(ctx, activities.RouteInput{Text: "list the items", Team: "T1", User: "U1"})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	h.route = route
	h.toolActivity = acts.ExecuteTool
	h.statusWorks = true
	return h, l
}

const (
	readTool  = "lucy_custom_items_list_items"
	writeTool = "lucy_custom_items_create_item"
)

// oneCall scripts the model: call tool once, then answer with what it read.
func oneCall(h *harness, tool string, args any) {
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(toolCall("c1", tool, args)), nil
		}
		return text("done"), nil
	}
}

// A read (a GET, recorded idempotent) answered 429 or 503 with Retry-After: 3 is waited out on a
// workflow timer (the test environment skips it, and its clock shows it) and made once more; the
// model reads the second answer, the service saw two requests, and the status line said what the
// run waited for.
func TestRetryAfterReadWaitsAndRetries(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			h, l := newLimited(t, status, "3", 1)
			if f := h.route.Specs[slices.IndexFunc(h.route.Specs, func(f activities.ToolFlags) bool { return f.Name == readTool })]; !f.Idempotent {
				t.Fatalf("the route recorded %+v", f)
			}
			oneCall(h, readTool, map[string]any{})
			var at []time.Time
			real := h.toolActivity
			h.toolActivity = func(ctx context.Context, in activities.ExecuteToolInput) (activities.ToolResult, error) {
				at = append(at, h.env.Now())
				return real(ctx, in)
			}
			if _, err := h.runAgent(runInput("list the items")); err != nil {
				t.Fatal(err)
			}
			if got := l.count("GET"); got != 2 || len(at) != 2 {
				t.Fatalf("the service saw %d requests, the activity ran %d times: want 2", got, len(at))
			}
			if d := at[1].Sub(at[0]); d < 3*time.Second || d > 4*time.Second {
				t.Fatalf("the call was made again after %v, want the 3 s the service asked", d)
			}
			if !slices.ContainsFunc(h.statuses, func(s string) bool {
				return strings.Contains(s, "waiting 3 s for the custom integration items")
			}) {
				t.Fatalf("statuses: %q", h.statuses)
			}
			if h.sawInline(1, "asked to wait") {
				t.Fatalf("the model read the wait although the call was made again: %q", h.inlineTexts(1))
			}
		})
	}
}

// A write (a POST, neither idempotent nor a safe method) answered 429 with Retry-After: 3 is not
// made again: the service saw exactly one request, and the model reads how long the service asked
// to wait and why the call was not repeated.
func TestRetryAfterWriteIsReported(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			h, l := newLimited(t, status, "3", 1)
			oneCall(h, writeTool, map[string]any{"body": map[string]any{"name": "x"}})
			if _, err := h.runAgent(runInput("create an item")); err != nil {
				t.Fatal(err)
			}
			if got := l.count("POST"); got != 1 || len(h.toolCalls) != 1 {
				t.Fatalf("the service saw %d requests (tool activity %d): want exactly 1", got, len(h.toolCalls))
			}
			if !h.sawInline(1, "asked to wait 3 s") || !h.sawInline(1, "not repeated because it may have taken effect") {
				t.Fatalf("the model read %q", h.inlineTexts(1))
			}
		})
	}
}

// A Retry-After beyond the cap (maxRetryAfter), as delay-seconds or as an HTTP-date, is reported,
// not waited: one request, and the model reads the wait.
func TestRetryAfterBeyondCapIsReported(t *testing.T) {
	h, l := newLimited(t, http.StatusTooManyRequests, "600", 1)
	oneCall(h, readTool, map[string]any{})
	start := h.env.Now()
	if _, err := h.runAgent(runInput("list the items")); err != nil {
		t.Fatal(err)
	}
	if got := l.count("GET"); got != 1 {
		t.Fatalf("the service saw %d requests, want 1", got)
	}
	if !h.sawInline(1, "asked to wait 10 min") || !h.sawInline(1, "longer than Lucy waits") {
		t.Fatalf("the model read %q", h.inlineTexts(1))
	}
	if d := h.env.Now().Sub(start); d >= 10*time.Minute {
		t.Fatalf("the run waited %v", d)
	}
}

// A service that keeps asking is called at most maxRetryAfterRepeats more times, then reported.
func TestRetryAfterRepeatsAreBounded(t *testing.T) {
	h, l := newLimited(t, http.StatusTooManyRequests, "2", 100)
	oneCall(h, readTool, map[string]any{})
	if _, err := h.runAgent(runInput("list the items")); err != nil {
		t.Fatal(err)
	}
	if got := l.count("GET"); got != 1+maxRetryAfterRepeats {
		t.Fatalf("the service saw %d requests, want %d", got, 1+maxRetryAfterRepeats)
	}
	if !h.sawInline(1, "still asks to wait") {
		t.Fatalf("the model read %q", h.inlineTexts(1))
	}
}

// "cancel that" during the wait: the timer goes with the run's context, the call is not made
// again, and the run ends cancelled at once, not after the wait.
func TestRetryAfterCancelDuringWait(t *testing.T) {
	h, l := newLimited(t, http.StatusTooManyRequests, "120", 1)
	oneCall(h, readTool, map[string]any{})
	var cancelledAt time.Time
	h.env.RegisterDelayedCallback(func() {
		if l.count("GET") != 1 {
			t.Errorf("before the cancel: %d requests", l.count("GET"))
		}
		cancelledAt = h.env.Now()
		h.env.CancelWorkflow()
	}, 30*time.Second)
	h.env.ExecuteWorkflow(AgentRunWorkflowName, runInput("list the items"))
	if !h.env.IsWorkflowCompleted() {
		t.Fatal("the run did not end")
	}
	var ce *temporal.CanceledError
	if err := h.env.GetWorkflowError(); !errors.As(err, &ce) {
		t.Fatalf("the run ended with %v, want cancelled", err)
	}
	if got := l.count("GET"); got != 1 {
		t.Fatalf("the service saw %d requests after the cancel, want 1", got)
	}
	if d := h.env.Now().Sub(cancelledAt); d > 10*time.Second {
		t.Fatalf("the run ended %v after the cancel", d)
	}
	if len(h.modelCalls) != 1 {
		t.Fatalf("the model was called %d times", len(h.modelCalls))
	}
}
