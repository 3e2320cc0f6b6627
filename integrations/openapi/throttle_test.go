package openapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

// throttleAPI is a service that rate limits: each operation answers with the status and
// Retry-After it is told to (RFC 6585 §4: "429 Too Many Requests … MAY include a Retry-After
// header indicating how long to wait before making a new request"; RFC 9110 §15.6.4: a 503 "MAY
// send a Retry-After header field … to suggest an appropriate amount of time for the client to
// wait"), and counts the requests that reach it.
type throttleAPI struct {
	srv      *httptest.Server
	mu       sync.Mutex
	calls    map[string]int
	status   int    // the answer to every operation (0: 200)
	retry    string // its Retry-After ("" for none)
	inFlight atomic.Int32
	most     atomic.Int32
	hold     time.Duration // how long GET /v1/slow holds each request
}

const throttleSpec = `{"openapi": "3.0.3", "info": {"title": "Items", "version": "1"}, "servers": [{"url": "{{URL}}/v1"}],
  "paths": {
    "/items": {
      "get": {"operationId": "listItems", "responses": {"200": {"description": "the items"}}},
      "post": {"operationId": "createItem", "requestBody": {"required": true, "content": {"application/json":
        {"schema": {"type": "object", "properties": {"name": {"type": "string"}}}}}},
        "responses": {"201": {"description": "created"}}}
    },
    "/slow": {"get": {"operationId": "slow", "responses": {"200": {"description": "slowly"}}}}
  }}`

func newThrottleAPI(t *testing.T) *throttleAPI {
	a := &throttleAPI{calls: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.ReplaceAll(throttleSpec, "{{URL}}", a.srv.URL))
	})
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.calls[r.Method+" "+r.URL.Path]++
		status, retry := a.status, a.retry
		a.mu.Unlock()
		if r.URL.Path == "/v1/slow" {
			n := a.inFlight.Add(1)
			for m := a.most.Load(); n > m && !a.most.CompareAndSwap(m, n); m = a.most.Load() {
			}
			time.Sleep(a.hold)
			a.inFlight.Add(-1)
		}
		if retry != "" {
			w.Header().Set("Retry-After", retry)
		}
		if status != 0 {
			w.WriteHeader(status)
			fmt.Fprint(w, `{"error": "slow down"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[]`)
	})
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

func (a *throttleAPI) count(key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[key]
}

// A 429 or 503 with Retry-After, in either of its forms, is a *tools.Throttled with the wait the
// service asked for, Safe for a GET (a safe method, RFC 9110 §9.2.1) and not for a POST; the tool
// sends exactly one request either way (the wait and any repeat are the workflow's); a 429 without
// Retry-After is handled as before.
func TestThrottledCall(t *testing.T) {
	api := newThrottleAPI(t)
	e := newEnv(t, envOpts{})
	e.resolve(t, args(t, map[string]any{"url": api.srv.URL + "/openapi.json", "name": "items"}))
	date := e.clock.Add(90 * time.Second).Format(http.TimeFormat)
	for _, c := range []struct {
		status int
		retry  string
		wait   time.Duration
	}{
		{http.StatusTooManyRequests, "3", 3 * time.Second},
		{http.StatusServiceUnavailable, "3", 3 * time.Second},
		{http.StatusTooManyRequests, date, 90 * time.Second},
		{http.StatusTooManyRequests, "3600", time.Hour}, // the workflow's caps decide, not the tool
	} {
		api.mu.Lock()
		api.status, api.retry, api.calls = c.status, c.retry, map[string]int{}
		api.mu.Unlock()
		_, err := e.run(t, "lucy_custom_items_list_items", `{}`)
		var th *tools.Throttled
		if !errors.As(err, &th) || th.Wait != c.wait || !th.Safe || th.Status != fmt.Sprintf("HTTP %d", c.status) {
			t.Fatalf("GET %d Retry-After %q: %v %+v", c.status, c.retry, err, th)
		}
		_, err = e.callAs(t, "ULOCAL", "lucy_custom_items_create_item", `{"body": {"name": "x"}}`, true, "")
		if !errors.As(err, &th) || th.Wait != c.wait || th.Safe {
			t.Fatalf("POST %d Retry-After %q: %v %+v", c.status, c.retry, err, th)
		}
		if api.count("GET /v1/items") != 1 || api.count("POST /v1/items") != 1 {
			t.Fatalf("the service saw %v: want one request of each", api.calls)
		}
	}
	api.mu.Lock()
	api.status, api.retry = http.StatusTooManyRequests, ""
	api.mu.Unlock()
	_, err := e.run(t, "lucy_custom_items_list_items", `{}`)
	var tr *tools.TransientError
	if !errors.As(err, &tr) {
		t.Fatalf("a 429 without Retry-After: %v", err)
	}
}

// A service whose record says maxConcurrent N gets at most N calls at once from this worker, the
// rest waiting for a slot: N+1 parallel calls never exceed N at the service, and all are answered.
func TestMaxConcurrent(t *testing.T) {
	api := newThrottleAPI(t)
	api.hold = 150 * time.Millisecond
	e := newEnv(t, envOpts{})
	e.resolve(t, args(t, map[string]any{"url": api.srv.URL + "/openapi.json", "name": "items"}))
	const n = 2
	ctx := t.Context()
	data, _, err := e.state.Read(ctx, tooltest.Team, objectPath("items"))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	rec["maxConcurrent"] = n
	data, _ = json.Marshal(rec)
	if _, err := e.state.Write(ctx, tooltest.Team, objectPath("items"), data, workspace.Cond{}); err != nil {
		t.Fatal(err)
	}
	e.svc.forget(tooltest.Team)
	var wg sync.WaitGroup
	for range n + 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := tooltest.Run(t, e.runner, "lucy_custom_items_slow", `{}`)
			if err != nil || out.IsError {
				t.Errorf("%v %+v", err, out)
			}
		}()
	}
	wg.Wait()
	if got := api.most.Load(); got != n {
		t.Fatalf("the service saw %d calls at once, want %d", got, n)
	}
	if api.count("GET /v1/slow") != n+1 {
		t.Fatalf("calls: %v", api.calls)
	}
}
