// Package e2e runs Lucy end to end: a real Temporal server in-process (temporaltest), the real worker
// and gateway, a fake OpenAI-compatible provider and the local Slack workspace as the Slack Web API.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/temporal"
	"go.temporal.io/server/temporaltest"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/devserver"
	"github.com/lucy-agent/lucy/gateway"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/logging"
	"github.com/lucy-agent/lucy/memory"
	"github.com/lucy-agent/lucy/searchattr"
	"github.com/lucy-agent/lucy/signing"
	"github.com/lucy-agent/lucy/worker"
	"github.com/lucy-agent/lucy/workflows"
)

const (
	team    = "T1"
	channel = "CLOCAL"
	human   = "ULOCAL"
	secret  = "e2e-signing-secret"
)

// stack is one running Lucy.
type stack struct {
	tb       testing.TB
	frontend string // the Temporal server's host:port
	client   client.Client
	worker   sdkworker.Worker
	slack    *localslack.Server
	slackURL string
	llm      *fakellm.Server
	gw       *httptest.Server
	user     *slack.Client
	cfg      *config.Config
	log      zerolog.Logger
	// dc is the data converter of the client and the worker; nil is the SDK default.
	dc converter.DataConverter
	// acts are the running worker's activities (their history cache, for the benchmarks).
	acts *activities.Activities
	// notes are the running worker's team notes (memory's activities keep them).
	notes *memory.Store
	// outbox acknowledges Slack's events in front of the dev server, as in `lucy dev` (nil on
	// temporaltest's server, where the gateway hands off before it acknowledges, as `lucy gateway`).
	outbox *gateway.Outbox
	// handoffs times each message's hand-off in the gateway (with the outbox, its insert).
	handoffs *timedHandoff
	// answers notes when each thread's answer reached the local Slack (answeredOnce).
	answers *answerLog
}

// answerLog notes, from the local Slack's OnMessage and OnEdit, when Lucy's message in each thread
// first held a delivered answer with benchAnswer in it: the benchmarks time an answer by it, to the
// request, where polling the threads measured up to its interval late and took the CPU of the
// process it measures.
type answerLog struct {
	mu      sync.Mutex
	at      map[string]time.Time // thread ts -> when its answer arrived
	changed chan struct{}        // a token after each new answer
}

// benchAnswer is the text of the benchmarks' answers (instantAnswer's, and those that stream).
const benchAnswer = "Answer to question"

func newAnswerLog() *answerLog {
	return &answerLog{at: map[string]time.Time{}, changed: make(chan struct{}, 1)}
}

// note is the hook: a bot's message with a delivered answer (not one still streaming, nor a stopped
// stream not yet rewritten into the answer: as answered decides).
func (l *answerLog) note(m localslack.Message) {
	if (m.BotID == "" && m.User != "ULUCY") || m.Streaming || (m.Metadata != nil && m.Metadata.EventPayload["key"] == "stream") ||
		!strings.Contains(m.Text, benchAnswer) {
		return
	}
	now := time.Now()
	l.mu.Lock()
	if _, seen := l.at[m.Root()]; !seen {
		l.at[m.Root()] = now
	}
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// times returns when each of threads got its answer, and how many have none yet.
func (l *answerLog) times(threads []string) (at []time.Time, missing int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ts := range threads {
		if t, ok := l.at[ts]; ok {
			at = append(at, t)
		} else {
			missing++
		}
	}
	return at, missing
}

// timedHandoff records how long each message's hand-off took, in the order they finished: what
// the acknowledgement waited for, without the HTTP request and the gateway's own work around it.
type timedHandoff struct {
	gateway.Handoff
	mu    sync.Mutex
	times []time.Duration
}

func (t *timedHandoff) Message(ctx context.Context, m workflows.Message) error {
	start := time.Now()
	err := t.Handoff.Message(ctx, m)
	t.mu.Lock()
	t.times = append(t.times, time.Since(start))
	t.mu.Unlock()
	return err
}

// WorkspaceStatus keeps the gateway's answer for a whole workspace.
func (t *timedHandoff) WorkspaceStatus(ctx context.Context, team string, see gateway.StatusFilter) (gateway.WorkspaceStatus, error) {
	return t.Handoff.(gateway.WorkspaceStatuser).WorkspaceStatus(ctx, team, see)
}

func (t *timedHandoff) durations() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]time.Duration(nil), t.times...)
}

func newStack(t *testing.T, llm fakellm.Handler) *stack {
	t.Helper()
	return newStackTB(t, llm)
}

// newStackTB also serves benchmarks; extra server options tune the embedded Temporal server.
func newStackTB(tb testing.TB, llm fakellm.Handler, serverOpts ...temporal.ServerOption) *stack {
	tb.Helper()
	return newStackWith(tb, llm, nil, serverOpts...)
}

// newStackWith runs the client, and the worker's activities, with the data converter dc (a codec,
// as for encryption); nil is the SDK default.
func newStackWith(tb testing.TB, llm fakellm.Handler, dc converter.DataConverter, serverOpts ...temporal.ServerOption) *stack {
	tb.Helper()
	return newStackOpts(tb, llm, stackOptions{dc: dc, serverOpts: serverOpts})
}

// stackOptions tune a stack beyond the defaults.
type stackOptions struct {
	dc         converter.DataConverter
	serverOpts []temporal.ServerOption
	// interceptors go on the client, which the worker and the gateway share (tracing).
	interceptors []interceptor.ClientInterceptor
	// devServer runs the embedded server `lucy dev` runs (package devserver: SQLite files in a
	// temporary directory) instead of temporaltest's in-memory one: the benchmarks measure that.
	// serverOpts do not apply to it.
	devServer bool
	// dataDir, when set, is the LUCY_DATA_DIR of the stack: another stack's, as when `lucy dev`
	// restarts over the same directory.
	dataDir string
	// onSlackMessage and onSlackEdit, when set, are the local workspace's Options.OnMessage and
	// OnEdit: the benchmarks time what appears in Slack by them.
	onSlackMessage, onSlackEdit func(localslack.Message)
	// noSlackLimits turns the local workspace's rate tiers off (localslack.Options.NoRateLimits).
	noSlackLimits bool
	// maxRunsPerTeam is the worker's LUCY_MAX_RUNS_PER_TEAM (0: no cap).
	maxRunsPerTeam int
}

func newStackOpts(tb testing.TB, llm fakellm.Handler, o stackOptions) *stack {
	tb.Helper()
	dc, serverOpts := o.dc, o.serverOpts
	if testing.Short() {
		tb.Skip("end-to-end test")
	}
	s := &stack{tb: tb, dc: dc, answers: newAnswerLog()}
	onMessage, onEdit := s.answers.note, s.answers.note
	if f := o.onSlackMessage; f != nil {
		onMessage = func(m localslack.Message) { s.answers.note(m); f(m) }
	}
	if f := o.onSlackEdit; f != nil {
		onEdit = func(m localslack.Message) { s.answers.note(m); f(m) }
	}
	s.slack, s.slackURL = localslack.NewTestServer(tb, localslack.Options{
		Token: "xoxb-test", Team: team, UserTokens: map[string]string{"xoxp-human": human, "xoxp-other": "UOTHER"},
		Users: []localslack.User{{ID: human, Name: "ada", RealName: "Ada Lovelace", TZ: "Europe/London"}, {ID: "UOTHER", Name: "bob"},
			{ID: "UADMIN", Name: "root", RealName: "Admin"}},
		Channels: []localslack.Channel{{ID: channel, Name: "general"}, {ID: "DLOCAL", IsIM: true, User: human},
			{ID: "CSECRET", Name: "secret", BotNotMember: true},
			// Bob's: a private channel Ada is not in, and his DM with Lucy (the access rule).
			{ID: "CBOB", Name: "bob-private", IsPrivate: true, Members: []string{"UOTHER", "ULUCY"}},
			{ID: "DBOB", IsIM: true, User: "UOTHER"}},
		OnMessage: onMessage, OnEdit: onEdit, NoRateLimits: o.noSlackLimits,
	})
	s.llm = fakellm.New(tb, llm)
	log := logging.New(io.Discard, "error", "json")
	if testing.Verbose() {
		log = logging.New(testWriter{tb}, "info", "console")
	}
	clientOpts := client.Options{Logger: logging.NewTemporal(log.Level(zerolog.WarnLevel)), DataConverter: dc, Interceptors: o.interceptors,
		// The server is on loopback: no gzip, as config.TemporalClientOptions decides for lucy dev.
		ConnectionOptions: client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionNone{}}}
	namespace := "default"
	if o.devServer {
		s.frontend = s.startDevServer(clientOpts)
	} else {
		// The dev server's speed settings (and temporaltest's own: search attributes seen at once).
		dyn := devserver.DynamicConfig()
		dyn[dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key()] = true
		serverOpts = append([]temporal.ServerOption{temporal.WithDynamicConfigClient(dyn)}, serverOpts...)
		srv := temporaltest.NewServer(temporaltest.WithBaseServerOptions(serverOpts...), temporaltest.WithBaseClientOptions(clientOpts))
		tb.Cleanup(srv.Stop)
		s.client, s.frontend, namespace = srv.GetDefaultClient(), srv.GetFrontendHostPort(), srv.GetDefaultNamespace()
	}
	// As `lucy dev` does: the runs set Lucy's search attributes.
	sactx, cancelSA := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelSA()
	if err := searchattr.Register(sactx, s.client, namespace); err != nil {
		tb.Fatal(err)
	}
	models := map[string]string{}
	for _, tier := range config.Tiers {
		models[tier] = "model-" + tier
	}
	s.cfg = &config.Config{
		TemporalNamespace: namespace, DataDir: o.dataDir, SlackBotToken: "xoxb-test", SlackAPIURL: s.slackURL,
		LLMBaseURL: s.llm.BaseURL(), LLMAPIKey: "sk-test", Provider: "custom", Models: models, AdminUsers: []string{"UADMIN"},
		// As config.Load derives it for the worker and the gateway alike.
		ApprovalKey: signing.FromBotToken("xoxb-test"), ApprovalKeySource: "SLACK_BOT_TOKEN", MaxToolCalls: config.DefaultMaxToolCalls,
		MaxRunsPerTeam: o.maxRunsPerTeam,
	}
	if s.cfg.DataDir == "" {
		s.cfg.DataDir = tb.TempDir()
	}
	s.log = log
	s.startWorker(log)
	handoff := gateway.NewTemporalHandoff(s.client, s.cfg.ApprovalKey)
	if o.devServer {
		// As `lucy dev` does in front of its embedded server: acknowledged from the outbox.
		ob, err := gateway.OpenOutbox(filepath.Join(s.cfg.DataDir, gateway.OutboxFile), handoff, s.dc, log)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = ob.Close() })
		s.outbox, s.handoffs = ob, &timedHandoff{Handoff: ob}
		handoff = s.handoffs
	}
	gw := gateway.New(gateway.Options{Handoff: handoff, BotUserID: "ULUCY", BotID: "BLUCY", Team: team, Log: log})
	s.gw = httptest.NewServer(gw.HTTPHandler(secret))
	tb.Cleanup(s.gw.Close)
	s.user = slack.New("xoxp-human", slack.OptionAPIURL(s.slackURL))
	return s
}

// startDevServer starts the server `lucy dev` runs, with its own data directory, and dials it.
func (s *stack) startDevServer(clientOpts client.Options) (frontend string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	devserver.TuneGC() // as lucy dev does
	srv, err := devserver.Start(ctx, devserver.Options{DataDir: s.tb.TempDir(), Logger: zerolog.Nop()})
	if err != nil {
		s.tb.Fatal(err)
	}
	s.tb.Cleanup(func() { _ = srv.Stop() })
	clientOpts.HostPort, clientOpts.Namespace = srv.FrontendAddress(), "default"
	c, err := client.DialContext(ctx, clientOpts)
	if err != nil {
		s.tb.Fatal(err)
	}
	s.tb.Cleanup(c.Close)
	s.client = c
	return srv.FrontendAddress()
}

func (s *stack) startWorker(log zerolog.Logger) {
	s.startWorkerWith(worker.Deps{Log: log})
}

// startWorkerWith starts the stack's worker with d (a test's MCP servers, its logger), filling in
// what every worker of the stack shares: its configuration, client, data converter and loopback
// access. Its MCP client is closed with the test.
func (s *stack) startWorkerWith(d worker.Deps) *worker.Activities {
	d.Config, d.Client, d.AllowPrivateNetworks, d.DataConverter = s.cfg, s.client, true, s.dc
	acts := worker.NewActivities(d)
	s.tb.Cleanup(acts.MCP.Close)
	s.acts = acts.Activities
	s.notes = acts.Memory.Store
	// Both temporaltest's server and devserver's keep their storage in SQLite, as `lucy dev` does.
	s.worker = sdkworker.New(s.client, workflows.TaskQueue, worker.Options(worker.Sizing{EmbeddedServer: true}))
	worker.Register(s.worker, acts)
	if err := s.worker.Start(); err != nil {
		s.tb.Fatal(err)
	}
	s.tb.Cleanup(s.stopWorker)
	return acts
}

func (s *stack) stopWorker() {
	if s.worker != nil {
		s.worker.Stop()
		s.worker = nil
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// say posts a human message in the local workspace (so the thread exists for real) and returns its ts.
func (s *stack) say(text, threadTS string) string {
	s.tb.Helper()
	opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	_, ts, err := s.user.PostMessage(channel, opts...)
	if err != nil {
		s.tb.Fatal(err)
	}
	return ts
}

// event sends a signed Events API request to the gateway, and delivers it again as Slack does if
// it is not acknowledged.
func (s *stack) event(evType, eventID, text, ts, threadTS, user string) *http.Response {
	s.tb.Helper()
	return s.deliver(evType, eventID, text, ts, threadTS, user, 3)
}

// eventOnce delivers an event once, without Slack's redeliveries: for the ack benchmark, where a
// 500 is a figure, not something to recover from.
func (s *stack) eventOnce(evType, eventID, text, ts, threadTS, user string) *http.Response {
	s.tb.Helper()
	return s.deliver(evType, eventID, text, ts, threadTS, user, 0)
}

func (s *stack) deliver(evType, eventID, text, ts, threadTS, user string, retries int) *http.Response {
	s.tb.Helper()
	ev := map[string]any{"type": evType, "user": user, "text": text, "ts": ts, "channel": channel, "event_ts": ts, "channel_type": "channel"}
	if threadTS != "" && threadTS != ts {
		ev["thread_ts"] = threadTS
	}
	body, _ := json.Marshal(map[string]any{
		"token": "x", "team_id": team, "api_app_id": "ALUCY", "type": "event_callback", "event_id": eventID,
		"event_time": time.Now().Unix(), "event": ev,
	})
	// As Slack does: an event not acknowledged with a 2xx is delivered again, up to three times, with
	// its retry number and reason. The gateway answers 500 when its hand-off fails (on a loaded
	// machine the first hand-off to a new server can overrun the ack budget); a test that stopped at
	// that 500 would test less than Slack guarantees. Each redelivery is logged.
	resp := s.post("/slack/events", body, "application/json", secret)
	for retry := 1; retry <= retries && resp.StatusCode >= 500; retry++ {
		s.tb.Logf("event %s answered %d; Slack delivers it again (retry %d)", eventID, resp.StatusCode, retry)
		time.Sleep(time.Duration(retry) * 200 * time.Millisecond)
		resp = s.postRetry("/slack/events", body, retry)
	}
	return resp
}

// postRetry is a redelivery of an Events API request, with the headers Slack sets on one.
func (s *stack) postRetry(path string, body []byte, retry int) *http.Response {
	s.tb.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.gw.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(retry))
	req.Header.Set("X-Slack-Retry-Reason", "http_error")
	localslack.Sign(req, body, secret, time.Now())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.tb.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func (s *stack) post(path string, body []byte, ctype, key string) *http.Response {
	s.tb.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.gw.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	localslack.Sign(req, body, key, time.Now())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.tb.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// botMessages returns Lucy's messages in a thread.
func (s *stack) botMessages(threadTS string) []localslack.Message {
	var out []localslack.Message
	for _, m := range s.slack.Messages(channel, threadTS) {
		if m.BotID != "" || m.User == "ULUCY" { // a file share has no bot_id: its author is the bot user
			out = append(out, m)
		}
	}
	return out
}

// waitFor polls cond until it holds or the deadline passes.
func (s *stack) waitFor(what string, timeout time.Duration, cond func() bool) {
	s.tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			s.tb.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-s.slack.Changed():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// answered reports whether Lucy's placeholder in the thread has become an answer containing want.
// A streamed answer counts once it is delivered: not while it streams, nor once stopped and not yet
// rewritten into the answer (its metadata key is still "stream").
func (s *stack) answered(threadTS, want string) bool {
	for _, m := range s.botMessages(threadTS) {
		// A stopped stream (a reply's, or the run's timeline carrying the reply's text) is a preview
		// until delivery re-keys it as the answer: the rendered answer may differ from it.
		if m.Streaming || (m.Metadata != nil && (m.Metadata.EventPayload["key"] == "stream" || m.Metadata.EventPayload["key"] == "timeline")) {
			continue
		}
		if strings.Contains(m.Text, want) {
			return true
		}
	}
	return false
}

func (s *stack) laneStatus(threadTS string) (workflows.LaneStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := s.client.QueryWorkflow(ctx, workflows.LaneID(workflows.LaneKey{Team: team, Channel: channel, ThreadTS: threadTS}), "", workflows.QueryStatus)
	if err != nil {
		return workflows.LaneStatus{}, err
	}
	var st workflows.LaneStatus
	err = v.Get(&st)
	return st, err
}

func lastUserText(req fakellm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return req.Messages[i].Text()
		}
	}
	return ""
}
