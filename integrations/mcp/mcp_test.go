package mcp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/lucy-agent/lucy/integrations/mcp"
	"github.com/lucy-agent/lucy/integrations/mcp/mcptest"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

// The test binary is its own stdio MCP server when mcptest.EnvMode is set.
func TestMain(m *testing.M) {
	if mode := os.Getenv(mcptest.EnvMode); mode != "" {
		mcptest.ServeStdio(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const team = "TTEST"

// stdio is the operator's server that runs this test binary in mode, logging to a file in dir.
func stdio(t *testing.T, name, mode string) (mcp.Server, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "events")
	return mcp.Server{Name: name, Command: exe, Env: map[string]string{mcptest.EnvMode: mode, mcptest.EnvLog: log}}, log
}

func newSource(t *testing.T, d mcp.Deps) *mcp.Source {
	t.Helper()
	d.Log = zerolog.Nop()
	if d.Limits.ConnectTimeout == 0 {
		d.Limits.ConnectTimeout = 5 * time.Second
	}
	s := mcp.New(d)
	t.Cleanup(s.Close)
	return s
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func byName(list []tools.Tool) map[string]tools.Tool {
	m := map[string]tools.Tool{}
	for _, tl := range list {
		m[tl.Spec.Name] = tl
	}
	return m
}

func names(list []tools.Tool) []string {
	var out []string
	for _, tl := range list {
		out = append(out, tl.Spec.Name)
	}
	slices.Sort(out)
	return out
}

func call(t *testing.T, tl tools.Tool, args string) (tools.Output, error) {
	t.Helper()
	return tl.Run(ctx(t), tools.Invocation{Name: tl.Spec.Name, Arguments: args, Team: team, User: "U1", CallID: "call_1"})
}

func TestStdioListingNamingAndFlags(t *testing.T) {
	srv, _ := stdio(t, "local", mcptest.Normal)
	s := newSource(t, mcp.Deps{Servers: []mcp.Server{srv}})
	list, err := s.Tools(ctx(t), team)
	if err != nil {
		t.Fatal(err)
	}
	got := byName(list)
	for _, n := range names(list) {
		if len(n) > 64 || strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			t.Errorf("tool name %q is not a valid OpenAI function name", n)
		}
		if !strings.HasPrefix(n, "mcp__local__") {
			t.Errorf("tool name %q lacks the server prefix", n)
		}
	}
	flags := []struct {
		name                   string
		idempotent, destructve bool
	}{
		{"mcp__local__echo", true, false},
		{"mcp__local__add_item", false, true}, // no annotations: destructive by the spec's default
		{"mcp__local__note", false, false},    // destructiveHint false: attempted once, no approval
		{"mcp__local__contradiction", false, true},
		{"mcp__local__get_user_info", true, false},
	}
	for _, f := range flags {
		tl, ok := got[f.name]
		if !ok {
			t.Errorf("%s not offered; got %v", f.name, names(list))
			continue
		}
		if tl.Spec.Idempotent != f.idempotent || tl.Spec.Destructive != f.destructve || !tl.Spec.Long {
			t.Errorf("%s: idempotent %v destructive %v long %v; want %v %v true", f.name, tl.Spec.Idempotent, tl.Spec.Destructive, tl.Spec.Long, f.idempotent, f.destructve)
		}
		if !strings.HasPrefix(tl.Spec.Description, "[MCP server local] ") {
			t.Errorf("%s: description %q lacks the server's name", f.name, tl.Spec.Description)
		}
	}
	if p := got["mcp__local__echo"].Spec.Parameters; p["type"] != "object" || p["required"] == nil {
		t.Errorf("echo parameters = %v", p)
	}
	var long []string
	for _, n := range names(list) {
		if strings.Contains(n, "very_long") {
			long = append(long, n)
		}
	}
	if len(long) != 1 || len(long[0]) != 64 {
		t.Errorf("the long tool is named %v, want one name of exactly 64 characters (cut, with a hash)", long)
	}
	// The same listing names alike (deterministic), in another Source too.
	again, _ := newSource(t, mcp.Deps{Servers: []mcp.Server{srv}}).Tools(ctx(t), team)
	if !slices.Equal(names(again), names(list)) {
		t.Errorf("names differ between two sources: %v vs %v", names(again), names(list))
	}
}

func TestStdioCalls(t *testing.T) {
	srv, log := stdio(t, "local", mcptest.Normal)
	s := newSource(t, mcp.Deps{Servers: []mcp.Server{srv}})
	list, _ := s.Tools(ctx(t), team)
	got := byName(list)

	out, err := call(t, got["mcp__local__echo"], `{"text":"hi there"}`)
	if err != nil || out.IsError || !strings.Contains(out.Content, "echo: hi there") || !strings.Contains(out.Content, `{"echoed":"hi there"}`) {
		t.Errorf("echo = %+v, %v", out, err)
	}
	out, err = call(t, got["mcp__local__media"], `{}`)
	if err != nil || !strings.Contains(out.Content, "[image: image/png, 2.0 KB; not shown]") || !strings.Contains(out.Content, "the notes") ||
		!strings.Contains(out.Content, "application/octet-stream, 10 bytes of binary data") || !strings.Contains(out.Content, "https://example.com/report") {
		t.Errorf("media = %q, %v", out.Content, err)
	}
	if strings.Contains(out.Content, "AAAA") {
		t.Errorf("media inlines base64: %q", out.Content)
	}
	out, err = call(t, got["mcp__local__fail"], `{}`)
	if err != nil || !out.IsError || !strings.Contains(out.Content, "it broke") {
		t.Errorf("fail = %+v, %v", out, err)
	}
	_, err = call(t, got["mcp__local__echo"], `{"text": 5}`)
	var argErr *tools.ArgError
	if !errors.As(err, &argErr) || !strings.Contains(argErr.Msg, "schema") {
		t.Errorf("echo with a number: %v, want an ArgError about the schema", err)
	}
	_, err = call(t, got["mcp__local__echo"], `[1]`)
	if !errors.As(err, &argErr) {
		t.Errorf("echo with an array: %v, want an ArgError", err)
	}
	out, err = call(t, got["mcp__local__add_item"], `{"item":"milk"}`)
	if err != nil || out.Content != "added milk" {
		t.Errorf("add_item = %+v, %v", out, err)
	}
	if ev := mcptest.LogEvents(log); !slices.Equal(ev, []string{"echo hi there", "add milk"}) {
		t.Errorf("server events = %q", ev)
	}
}

// Structured content that the text block already holds, in another key order, spacing and number
// spelling, reaches the model once; a text that says something else is kept beside it.
func TestStructuredContentSentOnce(t *testing.T) {
	srv, _ := stdio(t, "local", mcptest.Normal)
	s := newSource(t, mcp.Deps{Servers: []mcp.Server{srv}})
	list, _ := s.Tools(ctx(t), team)
	forecast := byName(list)["mcp__local__forecast"]
	out, err := call(t, forecast, `{}`)
	if err != nil || out.IsError {
		t.Fatalf("forecast = %+v, %v", out, err)
	}
	if n := strings.Count(out.Content, `"Paris"`); n != 1 {
		t.Errorf("the forecast reached the model %d times, want once: %q", n, out.Content)
	}
	out, err = call(t, forecast, `{"differ":true}`)
	if err != nil || strings.Count(out.Content, `"Paris"`) != 2 || !strings.Contains(out.Content, `"temperature":21`) ||
		!strings.Contains(out.Content, `"temperature": 22`) {
		t.Errorf("a text that differs from the structured content = %q, %v; want both", out.Content, err)
	}
}

// A server that exits in the middle of a call: a side-effecting tool says it may or may not have
// completed; the next listing starts the server again.
func TestStdioServerDiesMidCall(t *testing.T) {
	srv, _ := stdio(t, "local", mcptest.Normal)
	s := newSource(t, mcp.Deps{Servers: []mcp.Server{srv}})
	list, _ := s.Tools(ctx(t), team)
	out, err := call(t, byName(list)["mcp__local__crash"], `{}`)
	if err != nil || !out.IsError || !strings.Contains(out.Content, "may or may not have completed") {
		t.Fatalf("crash = %+v, %v; want a result saying it may or may not have completed", out, err)
	}
	out, err = call(t, byName(list)["mcp__local__echo"], `{"text":"back"}`)
	if err != nil || out.Content == "" || !strings.Contains(out.Content, "echo: back") {
		t.Errorf("echo after the crash = %+v, %v; want a new session", out, err)
	}
}

func TestListChangedRefreshesTheCache(t *testing.T) {
	srv, _ := stdio(t, "local", mcptest.Normal)
	s := newSource(t, mcp.Deps{Servers: []mcp.Server{srv}, Limits: mcp.Limits{TTL: time.Hour}})
	list, _ := s.Tools(ctx(t), team)
	if _, ok := byName(list)["mcp__local__grown"]; ok {
		t.Fatal("grown is offered before grow ran")
	}
	if out, err := call(t, byName(list)["mcp__local__grow"], `{}`); err != nil || out.Content != "grew" {
		t.Fatalf("grow = %+v, %v", out, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		list, _ = s.Tools(ctx(t), team)
		if _, ok := byName(list)["mcp__local__grown"]; ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("grown never offered (TTL is an hour: only list_changed can refresh); got %v", names(list))
}

func TestBadServersAreLeftOutWithAStatus(t *testing.T) {
	good, _ := stdio(t, "good", mcptest.Normal)
	garbage, _ := stdio(t, "garbage", mcptest.Garbage)
	hang, _ := stdio(t, "hang", mcptest.Hang)
	many, _ := stdio(t, "many", mcptest.Many)
	bad, _ := stdio(t, "badschema", mcptest.BadSchema)
	exit, _ := stdio(t, "exits", mcptest.Exit)
	locked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://example.com/.well-known/oauth-protected-resource"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	t.Cleanup(locked.Close)
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL + "/mcp"
	down.Close()
	servers := []mcp.Server{good, garbage, hang, many, bad, exit, {Name: "down", URL: downURL},
		{Name: "nocred", URL: "https://mcp.example.invalid/mcp", Credential: "missing"}, {Name: "locked", URL: locked.URL + "/mcp"}}
	s := newSource(t, mcp.Deps{Servers: servers, Limits: mcp.Limits{ConnectTimeout: 2 * time.Second}})

	start := time.Now()
	list, err := s.Tools(ctx(t), team)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if took > 4*time.Second {
		t.Errorf("listing took %v: servers must be listed at once, each bounded by ConnectTimeout (2 s)", took)
	}
	for _, n := range names(list) {
		if !strings.HasPrefix(n, "mcp__good__") {
			t.Errorf("%s is offered: only the good server's tools should be", n)
		}
	}
	if len(list) < 5 {
		t.Errorf("the good server's tools are missing: %v", names(list))
	}
	// Listed again at once: answered from the cache, the failed servers not retried yet.
	start = time.Now()
	if _, err := s.Tools(ctx(t), team); err != nil || time.Since(start) > 500*time.Millisecond {
		t.Errorf("second listing took %v (%v): it should answer from the cache", time.Since(start), err)
	}

	ints, err := s.Integrations(ctx(t), team)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"good": "tools", "garbage": "could not connect", "hang": "did not answer", "many": "more than 100 tools",
		"badschema": `tool "broken" has an input schema that is not valid JSON Schema`, "exits": "refuses to start",
		"down": "could not connect", "nocred": `needs the credential "missing"`,
		"locked": "requires authorization (HTTP 401): connect it with a credential",
	}
	for _, in := range ints {
		w, ok := want[in.Name]
		if !ok {
			t.Errorf("unexpected integration %+v", in)
			continue
		}
		delete(want, in.Name)
		if !strings.Contains(in.Status, w) || in.Healthy != (in.Name == "good") || in.Scope != "every team" || in.Kind != "mcp" {
			t.Errorf("%s: %+v; want status containing %q", in.Name, in, w)
		}
	}
	if len(want) != 0 {
		t.Errorf("integrations missing: %v", want)
	}
}

// Cancelling the call's context ("cancel that") cancels the call on the server.
func TestCancellationReachesTheServer(t *testing.T) {
	srv, log := stdio(t, "local", mcptest.Normal)
	s := newSource(t, mcp.Deps{Servers: []mcp.Server{srv}})
	list, _ := s.Tools(ctx(t), team)
	c, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := byName(list)["mcp__local__slow"].Run(c, tools.Invocation{Name: "mcp__local__slow", Arguments: `{"wait":true}`, Team: team})
		done <- err
	}()
	waitFor(t, func() bool { return slices.Contains(mcptest.LogEvents(log), "slow started") }, "the slow call to start")
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	waitFor(t, func() bool { return slices.Contains(mcptest.LogEvents(log), "cancelled slow") }, "the server to see the cancellation")
}

// A server's progress notifications become the activity's heartbeats.
func TestProgressBecomesHeartbeats(t *testing.T) {
	ts, url := httpServer(t)
	s := newSource(t, mcp.Deps{Servers: []mcp.Server{{Name: "remote", URL: url}}})
	list, _ := s.Tools(ctx(t), team)
	slow := byName(list)["mcp__remote__slow"]
	go func() {
		// The server notifies its progress before it starts waiting; the call ends once the
		// notifications had time to arrive (they are handled apart from the call's result).
		<-ts.Started
		time.Sleep(300 * time.Millisecond)
		close(ts.Release)
	}()

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	var mu sync.Mutex
	var beats []string
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		var d string
		if details.HasValues() && details.Get(&d) == nil {
			mu.Lock()
			beats = append(beats, d)
			mu.Unlock()
		}
	})
	env.RegisterActivityWithOptions(func(ctx context.Context) (string, error) {
		out, err := slow.Run(ctx, tools.Invocation{Name: slow.Spec.Name, Arguments: `{"wait":true}`, Team: team})
		return out.Content, err
	}, activity.RegisterOptions{Name: "RunSlow"})
	v, err := env.ExecuteActivity("RunSlow")
	if err != nil {
		t.Fatal(err)
	}
	var res string
	_ = v.Get(&res)
	if res != "released" {
		t.Errorf("result = %q", res)
	}
	mu.Lock()
	defer mu.Unlock()
	// The SDK sends the first heartbeat at once and throttles the next ones: at least one arrives.
	if !slices.ContainsFunc(beats, func(b string) bool { return b == "1/2 step 1" || b == "2/2 step 2" }) {
		t.Errorf("heartbeats = %q, want the server's progress steps", beats)
	}
}

// credStore is a real credential store over a temporary state store.
func credStore(t *testing.T) *secrets.Store {
	t.Helper()
	var key secrets.Key
	copy(key[:], "0123456789abcdef0123456789abcdef")
	st, err := secrets.New(workspace.NewLocalAt(t.TempDir()), key)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// putKey stores value under service for team, owned by owner, bound to origins (none: a key stored
// before keys were bound).
func putKey(t *testing.T, st *secrets.Store, service, value, owner string, b secrets.Binding) {
	t.Helper()
	if _, err := st.PutBound(context.Background(), team, service, value, owner, b); err != nil {
		t.Fatal(err)
	}
}

type fakeKeys struct {
	mu    sync.Mutex
	asked []string
}

func (k *fakeKeys) RequestKey(_ context.Context, inv tools.Invocation, service, why string, _ secrets.Binding) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.asked = append(k.asked, inv.Team+"/"+service+": "+why)
	return nil
}

func httpServer(t *testing.T) (*mcptest.Server, string) {
	ts := mcptest.New(mcptest.Normal, "")
	h := httptest.NewServer(mcptest.Handler(ts))
	t.Cleanup(h.Close)
	return ts, h.URL + "/mcp"
}

// A remote server over streamable HTTP, called with a team's stored credential as a bearer token,
// which never comes back in a result.
func TestHTTPServerWithCredential(t *testing.T) {
	ts, url := httpServer(t)
	const token = "tok-0123456789abcdef"
	creds := credStore(t)
	putKey(t, creds, "remote-key", token, secrets.OperatorOwner, secrets.Binding{}) // lucy secrets: bound at first use
	s := newSource(t, mcp.Deps{
		Servers:     []mcp.Server{{Name: "remote", URL: url, Credential: "remote-key"}},
		Credentials: creds,
	})
	list, _ := s.Tools(ctx(t), team)
	got := byName(list)
	out, err := call(t, got["mcp__remote__whoami"], `{}`)
	if err != nil || strings.Contains(out.Content, token) || !strings.Contains(out.Content, "Bearer "+secrets.Removed) {
		t.Errorf("whoami = %+v, %v; want the token scrubbed", out, err)
	}
	if ev := ts.Events(); !slices.Contains(ev, "whoami Bearer "+token) {
		t.Errorf("server events = %q: the bearer token did not arrive", ev)
	}
	// Another team has no such credential: the server is not offered to it.
	other, _ := s.Tools(ctx(t), "TOTHER")
	if len(other) != 0 {
		t.Errorf("TOTHER is offered %v without the credential", names(other))
	}

	// A server's failure of a read-only tool is transient (the workflow retries it); the next
	// attempt works.
	ts.FailNext.Store(1)
	_, err = call(t, got["mcp__remote__echo"], `{"text":"x"}`)
	var tr *tools.TransientError
	if !errors.As(err, &tr) || !strings.Contains(tr.Error(), "temporarily unavailable") {
		t.Errorf("echo failing on the server: %v, want a *tools.TransientError", err)
	}
	if out, err := call(t, got["mcp__remote__echo"], `{"text":"x"}`); err != nil || out.Content == "" || out.IsError {
		t.Errorf("echo again = %+v, %v", out, err)
	}
	// Arguments that do not match the schema never reach the server.
	before := ts.Calls("add_item")
	_, err = call(t, got["mcp__remote__add_item"], `{}`)
	var argErr *tools.ArgError
	if !errors.As(err, &argErr) || !strings.Contains(argErr.Msg, "item") || ts.Calls("add_item") != before {
		t.Errorf("add_item without its required item: %v, want an ArgError, and no call on the server", err)
	}
}

// An older server over HTTP+SSE, with the team's credential in a header the configuration names.
func TestSSEServerWithCredentialHeader(t *testing.T) {
	ts := mcptest.New(mcptest.Normal, "")
	var mu sync.Mutex
	var seen []string // X-Api-Key and Authorization of every request
	sse := mcptest.SSEHandler(ts)
	h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("X-Api-Key")+"|"+r.Header.Get("Authorization"))
		mu.Unlock()
		sse.ServeHTTP(w, r)
	}))
	t.Cleanup(h.Close)
	const key = "key-abcdef0123456789"
	servers, err := mcp.ParseConfig([]byte(`{"mcpServers": {"legacy": {"type": "sse", "url": "` + h.URL + `",
		"headers": {"X-Api-Key": "${credential}"}, "credential": "legacy"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	creds := credStore(t)
	putKey(t, creds, "legacy", key, secrets.OperatorOwner, secrets.Binding{})
	s := newSource(t, mcp.Deps{Servers: servers, Credentials: creds})
	list, _ := s.Tools(ctx(t), team)
	out, err := call(t, byName(list)["mcp__legacy__echo"], `{"text":"over sse"}`)
	if err != nil || !strings.Contains(out.Content, "echo: over sse") {
		t.Fatalf("echo over SSE = %+v, %v", out, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || slices.ContainsFunc(seen, func(v string) bool { return v != key+"|" }) {
		t.Errorf("requests carried %q; want every one with the key in X-Api-Key and no bearer token", seen)
	}
}

// A remote server that went away: a read-only tool's failure is transient (the workflow retries it);
// a side-effecting one says it may or may not have run.
func TestHTTPServerDown(t *testing.T) {
	ts := mcptest.New(mcptest.Normal, "")
	h := httptest.NewServer(mcptest.Handler(ts))
	s := newSource(t, mcp.Deps{Servers: []mcp.Server{{Name: "remote", URL: h.URL + "/mcp"}}, Limits: mcp.Limits{ConnectTimeout: 2 * time.Second}})
	list, _ := s.Tools(ctx(t), team)
	got := byName(list)
	h.CloseClientConnections()
	h.Close()
	_, err := call(t, got["mcp__remote__echo"], `{"text":"x"}`)
	var tr *tools.TransientError
	if !errors.As(err, &tr) {
		t.Errorf("echo with the server down: %v, want a *tools.TransientError", err)
	}
	out, err := call(t, got["mcp__remote__add_item"], `{"item":"x"}`)
	if err != nil || !out.IsError {
		t.Errorf("add_item with the server down = %+v, %v; want a result with IsError", out, err)
	}
}

func TestConnectAndDisconnectFromChat(t *testing.T) {
	ts, url := httpServer(t)
	state := workspace.NewLocalAt(t.TempDir())
	keys := &fakeKeys{}
	s := newSource(t, mcp.Deps{
		State: state, Keys: keys, Credentials: credStore(t), Admins: []string{"UADMIN"},
		Servers: []mcp.Server{{Name: "ops", URL: "https://ops.example.invalid/mcp"}},
		// httptest is on loopback: these tests allow it, as an operator's allow-list would.
		CheckURL: tools.AllowAllPrivate().CheckURL,
		HTTP:     tools.NewGuardedClient(nil, tools.AllowAllPrivate()),
	})
	r, err := tools.NewRunner(zerolog.Nop(), []any{s})
	if err != nil {
		t.Fatal(err)
	}
	run := func(user, name, args string) (tools.Output, error) {
		return r.Run(ctx(t), tools.Invocation{Name: name, Arguments: args, Team: team, User: user, CallID: "c1"})
	}

	// The default guard refuses a private address.
	guarded := newSource(t, mcp.Deps{State: state})
	gr, _ := tools.NewRunner(zerolog.Nop(), []any{guarded})
	_, err = gr.Run(ctx(t), tools.Invocation{Name: mcp.ConnectServer, Arguments: `{"name":"x","url":"` + url + `"}`, Team: team, User: "U1"})
	var argErr *tools.ArgError
	if !errors.As(err, &argErr) || !strings.Contains(argErr.Msg, "public address") {
		t.Errorf("connecting a loopback URL: %v, want an ArgError about a public address", err)
	}

	for _, bad := range []struct{ args, want string }{
		{`{"name":"ops","url":"https://a.example/mcp"}`, "operator configured"},
		{`{"name":"a b","url":"https://a.example/mcp"}`, "not a usable server name"},
		{`{"name":"a","url":"ftp://a.example/mcp"}`, "not an absolute https URL"},
		{`{"name":"a","url":"https://a.example/mcp?token=abcdef"}`, "carries a credential"},
		{`{"name":"a","url":"http://a.example/mcp","credential":"k"}`, "only over https"},
	} {
		_, err := run("U1", mcp.ConnectServer, bad.args)
		if !errors.As(err, &argErr) || !strings.Contains(argErr.Msg, bad.want) {
			t.Errorf("connect %s: %v, want an ArgError containing %q", bad.args, err, bad.want)
		}
	}

	out, err := run("U1", mcp.ConnectServer, `{"name":"Tracker","url":"`+url+`"}`)
	if err != nil || out.IsError || !strings.Contains(out.Content, "offers") || !strings.Contains(out.Content, "echo") {
		t.Fatalf("connect = %+v, %v", out, err)
	}
	list, _ := s.Tools(ctx(t), team)
	if _, ok := byName(list)["mcp__tracker__echo"]; !ok {
		t.Errorf("the connected server's tools are not offered: %v", names(list))
	}
	if other, _ := s.Tools(ctx(t), "TOTHER"); len(other) != 0 {
		t.Errorf("another team is offered %v", names(other))
	}
	// A second worker (another Source over the same state) sees it.
	s2 := newSource(t, mcp.Deps{State: state, CheckURL: tools.AllowAllPrivate().CheckURL, HTTP: tools.NewGuardedClient(nil, tools.AllowAllPrivate())})
	if l2, _ := s2.Tools(ctx(t), team); len(l2) == 0 {
		t.Errorf("another worker does not see the team's server")
	}
	out, _ = run("U2", mcp.ConnectServer, `{"name":"tracker","url":"`+url+`"}`)
	if !out.IsError || !strings.Contains(out.Content, "already has") {
		t.Errorf("connecting the same name again = %+v", out)
	}

	// A credential not stored yet: the person is asked for it.
	out, err = run("U1", mcp.ConnectServer, `{"name":"keyed","url":"https://keyed.example.com/mcp","credential":"Keyed-Token"}`)
	if err != nil || !strings.Contains(out.Content, "Add key button") {
		t.Errorf("connect with a missing credential = %+v, %v", out, err)
	}
	if len(keys.asked) != 1 || !strings.HasPrefix(keys.asked[0], team+"/keyed-token: ") {
		t.Errorf("keys asked = %q", keys.asked)
	}

	ints, _ := s.Integrations(ctx(t), team)
	var tracker *struct{ scope, by string }
	for _, in := range ints {
		if in.Name == "tracker" {
			tracker = &struct{ scope, by string }{in.Scope, in.AddedBy}
			if !in.Healthy || in.Tools == 0 {
				t.Errorf("tracker integration = %+v", in)
			}
		}
	}
	if tracker == nil || tracker.scope != "<@U1>'s own (only their requests)" || tracker.by != "U1" {
		t.Errorf("integrations = %+v", ints)
	}

	out, _ = run("U2", mcp.DisconnectServer, `{"name":"tracker"}`)
	if !out.IsError || !strings.Contains(out.Content, "only they or an admin") {
		t.Errorf("disconnect by another person = %+v", out)
	}
	out, _ = run("U1", mcp.DisconnectServer, `{"name":"ops"}`)
	if !out.IsError || !strings.Contains(out.Content, "operator") {
		t.Errorf("disconnect the operator's server = %+v", out)
	}
	out, err = run("UADMIN", mcp.DisconnectServer, `{"name":"tracker"}`)
	if err != nil || out.IsError {
		t.Fatalf("disconnect by an admin = %+v, %v", out, err)
	}
	list, _ = s.Tools(ctx(t), team)
	if _, ok := byName(list)["mcp__tracker__echo"]; ok {
		t.Errorf("a disconnected server's tools are still offered")
	}
	out, _ = run("U1", mcp.DisconnectServer, `{"name":"tracker"}`)
	if !out.IsError || !strings.Contains(out.Content, "keyed") {
		t.Errorf("disconnect an unknown server = %+v, want the list of connected ones", out)
	}
	_ = ts
}

func TestApprovalShowsNameURLAndCredential(t *testing.T) {
	summary, details := tools.ApprovalSummary(mcp.ConnectServer, `{"name":"gh","url":"https://mcp.example.com/v1/mcp","credential":"github"}`)
	for _, want := range []string{"gh", "https://mcp.example.com/v1/mcp", "github"} {
		if !strings.Contains(summary+details, want) {
			t.Errorf("approval %q / %q does not show %q", summary, details, want)
		}
	}
	summary, details = tools.ApprovalSummary(mcp.DisconnectServer, `{"name":"gh"}`)
	if !strings.Contains(summary, "gh") || details == "" {
		t.Errorf("disconnect approval = %q / %q", summary, details)
	}
}

func TestParseConfig(t *testing.T) {
	servers, err := mcp.ParseConfig([]byte(`{"mcpServers": {
		"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/data"], "env": {"DEBUG": "1"}},
		"github": {"url": "https://api.githubcopilot.com/mcp/", "credential": "GitHub"},
		"old": {"type": "sse", "url": "https://old.example.com/sse", "headers": {"X-Api-Key": "${credential}"}, "credential": "old"},
		"off": {"command": "x", "disabled": true}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 3 || servers[0].Name != "files" || servers[1].Credential != "github" || servers[2].Type != "sse" {
		t.Errorf("servers = %+v", servers)
	}
	for _, bad := range []struct{ json, want string }{
		{`{`, "not valid JSON"},
		{`{"servers": {}}`, `no "mcpServers"`},
		{`{"mcpServers": {"a": {}}}`, `give "command"`},
		{`{"mcpServers": {"a": {"command": "x", "url": "https://a"}}}`, "not both"},
		{`{"mcpServers": {"a b": {"command": "x"}}}`, "not a usable server name"},
		{`{"mcpServers": {"a": {"url": "not a url"}}}`, "not an absolute http or https URL"},
		{`{"mcpServers": {"a": {"command": "x", "credential": "k"}}}`, "for remote servers"},
		{`{"mcpServers": {"a": {"url": "https://a.example", "headers": {"K": "${credential}"}}}}`, `names no "credential"`},
		{`{"mcpServers": {"a": {"url": "https://a.example", "type": "websocket"}}}`, "not one Lucy knows"},
		{`{"mcpServers": {"a": {"command": "x"}, "A": {"command": "y"}}}`, "differ only in case"},
	} {
		_, err := mcp.ParseConfig([]byte(bad.json))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseConfig(%s) = %v, want an error containing %q", bad.json, err, bad.want)
		}
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "mcp.json")
	if s, err := mcp.LoadFile(missing, false); err != nil || s != nil {
		t.Errorf("a missing default file = %v, %v; want no servers", s, err)
	}
	if _, err := mcp.LoadFile(missing, true); err == nil || !strings.Contains(err.Error(), "LUCY_MCP_CONFIG") {
		t.Errorf("a missing named file = %v, want an error naming LUCY_MCP_CONFIG", err)
	}
	if err := os.WriteFile(missing, []byte(`{"mcpServers": {"a": {"url": "nope"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := mcp.LoadFile(missing, false); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("an invalid default file = %v, want an error naming the file", err)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}
