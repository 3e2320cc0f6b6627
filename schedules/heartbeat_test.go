package schedules

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"

	"github.com/lucy-agent/lucy/tools"
)

// flipper is a server whose answer the test changes.
type flipper struct {
	mu     sync.Mutex
	status int
	body   string
	ctype  string
	delay  time.Duration
}

func (f *flipper) set(status int, ctype, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.ctype, f.body = status, ctype, body
}

func newFlipper(t *testing.T) (*flipper, string) {
	f := &flipper{status: 200, ctype: "text/plain", body: "all good"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		status, ctype, body, delay := f.status, f.ctype, f.body, f.delay
		f.mu.Unlock()
		time.Sleep(delay)
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// steps runs the check repeatedly, feeding each state to the next, and returns the alerts.
func steps(t *testing.T, r *testDomain, spec MonitorSpec, each func(i int)) []string {
	t.Helper()
	var st MonitorState
	var alerts []string
	for i := 0; i < 6; i++ {
		each(i)
		res := r.CheckMonitor(t.Context(), spec, st)
		if res.Alert != "" {
			alerts = append(alerts, fmt.Sprintf("%d:%s", i, res.Alert))
		}
		st = res.State
	}
	return alerts
}

func TestMonitorAlertsOnlyOnChange(t *testing.T) {
	f, url := newFlipper(t)
	r := newTestDomain(t, testDeps{AllowPrivateNetworks: true})

	// http: up, up, down, down, up, up → one alert down, one up.
	spec := MonitorSpec{Name: "api", Check: MonitorCheck{Kind: CheckHTTP, URL: url}}
	alerts := steps(t, r, spec, func(i int) {
		if i == 2 || i == 3 {
			f.set(503, "text/plain", "down")
		} else {
			f.set(200, "text/plain", "ok")
		}
	})
	if len(alerts) != 2 || !strings.HasPrefix(alerts[0], "2:🔴 *api* is failing: HTTP 503") || !strings.HasPrefix(alerts[1], "4:🟢 *api* is OK again: HTTP 200") {
		t.Errorf("http alerts %q", alerts)
	}

	// Latency.
	f.set(200, "text/plain", "ok")
	f.mu.Lock()
	f.delay = 60 * time.Millisecond
	f.mu.Unlock()
	res := r.CheckMonitor(t.Context(), MonitorSpec{Name: "slow", Check: MonitorCheck{Kind: CheckHTTP, URL: url, MaxLatencyMS: 20}}, MonitorState{})
	if res.State.Status != "alert" || !strings.Contains(res.Alert, "slower than 20 ms") || !strings.Contains(res.Alert, "from its first check") {
		t.Errorf("latency: %+v", res)
	}
	f.mu.Lock()
	f.delay = 0
	f.mu.Unlock()

	// page contains: present, present, gone, gone, back.
	spec = MonitorSpec{Name: "stock", Check: MonitorCheck{Kind: CheckPage, URL: url, Contains: "In stock"}}
	alerts = steps(t, r, spec, func(i int) {
		if i == 2 || i == 3 {
			f.set(200, "text/html", "<html><body><p>Sold out</p></body></html>")
		} else {
			f.set(200, "text/html", "<html><body><p>In stock</p></body></html>")
		}
	})
	if len(alerts) != 2 || !strings.Contains(alerts[0], `no longer contains "In stock"`) || !strings.HasPrefix(alerts[1], "4:🟢") {
		t.Errorf("page alerts %q", alerts)
	}

	// page changes: baseline, same, changed, same, changed again.
	spec = MonitorSpec{Name: "docs", Check: MonitorCheck{Kind: CheckPage, URL: url}}
	alerts = steps(t, r, spec, func(i int) {
		f.set(200, "text/plain", map[int]string{0: "v1", 1: "v1", 2: "v2", 3: "v2", 4: "v3", 5: "v3"}[i])
	})
	if len(alerts) != 2 || !strings.HasPrefix(alerts[0], "2:🔔 *docs*: the page changed") || !strings.HasPrefix(alerts[1], "4:🔔") {
		t.Errorf("change alerts %q", alerts)
	}

	// page changes, unreadable from the start: down, first text (no "unchanged" claim: there was
	// nothing to compare with), down, back unchanged, back changed.
	pages := []struct {
		status int
		body   string
	}{{500, "x"}, {200, "v1"}, {404, "x"}, {200, "v1"}, {500, "x"}, {200, "v2"}}
	alerts = steps(t, r, spec, func(i int) { f.set(pages[i].status, "text/plain", pages[i].body) })
	want := []string{"0:🔴 *docs*: the page could not be read: HTTP 500", "1:🟢 *docs*: the page can be read now",
		"2:🔴", "3:🟢 *docs*: the page can be read again (unchanged)", "4:🔴", "5:🟢 *docs*: the page can be read again, and it changed"}
	if len(alerts) != len(want) {
		t.Fatalf("unreadable change alerts %q", alerts)
	}
	for i, w := range want {
		if !strings.HasPrefix(alerts[i], w) {
			t.Errorf("unreadable change alert %d = %q, want %q…", i, alerts[i], w)
		}
	}

	// json threshold: price 30, 30, 18 (< 20: alert), 15, 25 (clears), 25.
	spec = MonitorSpec{Name: "price", Check: MonitorCheck{Kind: CheckJSON, URL: url, Path: "$.data.items[0].price", Op: "<", Threshold: 20}}
	prices := []float64{30, 30, 18, 15, 25, 25}
	alerts = steps(t, r, spec, func(i int) {
		f.set(200, "application/json", fmt.Sprintf(`{"data":{"items":[{"price":%v}]}}`, prices[i]))
	})
	if len(alerts) != 2 || !strings.Contains(alerts[0], "$.data.items[0].price is 18 (< 20)") || !strings.HasPrefix(alerts[1], "4:🟢") {
		t.Errorf("json alerts %q", alerts)
	}

	// Unreachable counts as failing, with why.
	res = r.CheckMonitor(t.Context(), MonitorSpec{Name: "gone", Check: MonitorCheck{Kind: CheckHTTP, URL: "http://127.0.0.1:1/"}}, MonitorState{Status: "ok"})
	if res.State.Status != "alert" || !strings.Contains(res.Alert, "unreachable") {
		t.Errorf("unreachable: %+v", res)
	}
}

// LUCY_ALLOWED_PRIVATE_HOSTS: a monitor may be made for, and checks, an internal server only when
// its address and port (or a range holding it) are listed; otherwise creating it is refused with what
// to do, and a check of it (made before the setting changed) fails as private without a request.
func TestMonitorAllowedPrivateHosts(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(srv.Close)
	hostPort := strings.TrimPrefix(srv.URL, "http://")
	check := MonitorCheck{Kind: CheckHTTP, URL: srv.URL + "/health"}
	for _, tt := range []struct {
		spec    string
		allowed bool
	}{
		{hostPort, true}, {"127.0.0.0/8", true}, {"", false}, {"127.0.0.1:1", false}, {"wiki.internal", false},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			hosts, err := tools.ParseAllowedPrivateHosts(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			r := newTestDomain(t, testDeps{PrivateHosts: hosts})
			before := hits.Load()
			verr := r.validateCheck(t.Context(), check, false)
			res := r.CheckMonitor(t.Context(), MonitorSpec{Name: "wiki", Check: check}, MonitorState{Status: "ok"})
			if tt.allowed {
				if verr != nil {
					t.Errorf("validateCheck: %v", verr)
				}
				if res.State.Status != "ok" || hits.Load() != before+1 {
					t.Errorf("check: %+v, %d request(s); want ok after one request", res, hits.Load()-before)
				}
				return
			}
			wantArgError(t, verr, CreateHeartbeat, "private, loopback, link-local or reserved", "LUCY_ALLOWED_PRIVATE_HOSTS")
			if res.State.Status != "alert" || res.State.Evidence != "the address is private" || hits.Load() != before {
				t.Errorf("check: %+v, %d request(s); want a private-address alert and no request", res, hits.Load()-before)
			}
		})
	}
}

func TestLookupJSON(t *testing.T) {
	doc := map[string]any{"a": map[string]any{"b": []any{1.0, map[string]any{"c": "42.5"}}}, "ok": true}
	for _, tt := range []struct {
		path string
		want float64
		err  string
	}{
		{"a.b.0", 1, ""}, {"$.a.b[1].c", 42.5, ""}, {"ok", 1, ""},
		{"a.x", 0, `has no "x"`}, {"a.b.7", 0, "not an index"}, {"a", 0, "not a number"}, {"a..b", 0, "empty step"},
	} {
		got, err := lookupJSON(doc, tt.path)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err %v, want %q", tt.path, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s = %v, %v; want %v", tt.path, got, err, tt.want)
		}
	}
}

func TestCreateHeartbeatBadInput(t *testing.T) {
	r := newTestDomain(t, testDeps{})
	for _, tt := range []struct{ args, want string }{
		{`{"name": "x", "kind": "ping", "url": "https://example.com"}`, "must be one of http, page, json"},
		{`{"name": "x", "kind": "http", "url": "example.com"}`, "not an absolute http or https URL"},
		{`{"name": "x", "kind": "http", "url": "http://169.254.169.254/"}`, "monitors check public addresses"},
		{`{"name": "x", "kind": "json", "url": "https://example.com", "path": "a"}`, "needs path, op and threshold"},
		{`{"name": "x", "kind": "page", "url": "https://example.com", "contains": "a", "not_contains": "b"}`, "not both"},
		{`{"name": "x", "kind": "http", "url": "https://example.com", "every_minutes": 0}`, `"every_minutes" must be at least 1`},
	} {
		_, err := run(t, r, CreateHeartbeat, tt.args)
		wantArgError(t, err, CreateHeartbeat, tt.want)
	}
}

func TestCheckHeartbeatBadInput(t *testing.T) {
	r := newTestDomain(t, testDeps{})
	_, err := run(t, r, CheckHeartbeat, `{}`)
	wantArgError(t, err, CheckHeartbeat, `"name"`)
	_, err = run(t, r, CheckHeartbeat, `{"name": "!!!"}`)
	wantArgError(t, err, CheckHeartbeat, "not a usable name")
	// Without Temporal's schedules the tool says so and checks nothing.
	out, err := run(t, r, CheckHeartbeat, `{"name": "api"}`)
	if err != nil || !out.IsError || !strings.Contains(out.Content, "not available") {
		t.Errorf("no schedules: %+v, %v", out, err)
	}
}

// A monitor relaying a page into a channel must not exist, nor check anything, without a person's
// approval showing its kind, URL, condition, interval and channel; a stale approval asks again.
func TestCreateHeartbeatNeedsApproval(t *testing.T) {
	e := newSchedEnv(t, ScheduleLimits{})
	args := `{"name":"status page","kind":"page","url":"https://status.example.com/feed?since=2026","every_minutes":10,"channel":"#ops"}`
	need := e.ask(t, "ULOCAL", CreateHeartbeat, args)
	if len(e.f.ids()) != 0 {
		t.Fatalf("a monitor exists before the approval: %v", e.f.ids())
	}
	wantContains(t, need.Summary, "status page", "every 10 minute(s)", "<#COPS>")
	wantContains(t, need.Details, "*Kind:* page", "`https://status.example.com/feed?since=2026`", "changes",
		"*Every:* 10 minute(s)", "first check runs as soon as this is approved", "<#COPS>", "quotes the page's text")
	if strings.Contains(need.Details, "carries data") {
		t.Errorf("an ordinary URL is flagged as carrying data:\n%s", need.Details)
	}
	// A monitor whose URL carries data (a channel's text, base64 in the query) says so in its prompt.
	leak := strings.Replace(args, "since=2026", "d="+strings.Repeat("QmFua3MgYW5kIHNhbGFyaWVz", 20), 1)
	leak = strings.Replace(leak, "status page", "leak page", 1)
	wantContains(t, e.ask(t, "ULOCAL", CreateHeartbeat, leak).Details, "This URL carries data", "sent to that site at every check")

	// Approved for another URL: asks again, creates nothing.
	other := e.ask(t, "ULOCAL", CreateHeartbeat, strings.Replace(args, "status.example.com", "elsewhere.example.com", 1))
	out, err := e.call(t, "ULOCAL", CreateHeartbeat, args, true, other.Guard)
	if err != nil || out.NeedsApproval == nil {
		t.Fatalf("stale approval: %v %+v, want a new request", err, out)
	}
	if len(e.f.ids()) != 0 {
		t.Fatalf("a stale approval created %v", e.f.ids())
	}

	out, err = e.call(t, "ULOCAL", CreateHeartbeat, args, true, need.Guard)
	if err != nil || out.IsError || out.NeedsApproval != nil {
		t.Fatalf("approved: %v %+v", err, out)
	}
	wantContains(t, out.Content, "Created the monitor", "heartbeat:TTEST:status-page")
	s, ok := e.f.get("heartbeat:TTEST:status-page")
	if !ok || !s.triggerImmediately || len(s.spec.Intervals) != 1 || s.spec.Intervals[0].Every != 10*time.Minute {
		t.Fatalf("stored monitor %+v", s)
	}
	var spec MonitorSpec
	if err := json.Unmarshal(s.action.Args[0].(*commonpb.Payload).GetData(), &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Check.URL != "https://status.example.com/feed?since=2026" || spec.Channel != "COPS" || spec.Creator != "ULOCAL" {
		t.Errorf("spec %+v", spec)
	}

	// A name in use is refused before asking.
	out, err = e.call(t, "ULOCAL", CreateHeartbeat, args, false, "")
	if err != nil || out.NeedsApproval != nil {
		t.Fatalf("%v %+v", err, out)
	}
	wantToolError(t, out, "already exists")
}

func TestHeartbeatMinimumIntervalAndQuotas(t *testing.T) {
	e := newSchedEnv(t, ScheduleLimits{MonitorsPerTeam: 4, MonitorsPerUser: 1})
	mon := func(name string, every int) string {
		return fmt.Sprintf(`{"name":%q,"kind":"http","url":"https://example.com/%s","every_minutes":%d}`, name, name, every)
	}
	_, err := e.call(t, "ULOCAL", CreateHeartbeat, mon("fast", 1), false, "")
	wantArgError(t, err, CreateHeartbeat, "every_minutes is 1", "5 minutes", "LUCY_MIN_MONITOR_INTERVAL")
	e.approve(t, "ULOCAL", CreateHeartbeat, mon("a", 5))

	out, err := e.call(t, "ULOCAL", CreateHeartbeat, mon("b", 5), false, "")
	if err != nil || out.NeedsApproval != nil {
		t.Fatalf("%v %+v", err, out)
	}
	wantToolError(t, out, "<@ULOCAL> already has 1 monitors", "LUCY_MAX_MONITORS_PER_USER=1", DeleteHeartbeat)
	e.approve(t, "UOTHER", CreateHeartbeat, mon("b", 5))
	e.approve(t, "UADMIN", CreateHeartbeat, mon("c", 5))
	e.approve(t, "UADMIN", CreateHeartbeat, mon("d", 5)) // admins: the workspace's limit only
	out, _ = e.call(t, "UADMIN", CreateHeartbeat, mon("e", 5), false, "")
	wantToolError(t, out, "this workspace has 4 monitors", "LUCY_MAX_MONITORS_PER_TEAM=4")

	// The default interval follows an operator's higher minimum.
	e20 := newSchedEnv(t, ScheduleLimits{MinMonitorInterval: 20 * time.Minute})
	need := e20.ask(t, "ULOCAL", CreateHeartbeat, `{"name":"slow","kind":"http","url":"https://example.com/"}`)
	wantContains(t, need.Details, "*Every:* 20 minute(s)")
}
