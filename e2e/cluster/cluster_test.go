// Package cluster tests Lucy in its production shape on one machine: PostgreSQL, a Temporal server
// on it in a process of its own (temporal-server, the server's postgres12_pgx persistence and SQL
// visibility), `lucy setup`, two `lucy worker` processes and one `lucy gateway` process, with a
// local Slack (localslack) and a fake model (internal/fakellm) on loopback. The deploy README's
// steps in that order: database, server, setup, workers, gateway.
package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slack-go/slack"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/localslack"
)

const (
	team     = "T1"
	channel  = "CLOCAL"
	human    = "ULOCAL"
	botUser  = localslack.DefaultBotUserID
	botToken = "xoxb-cluster"
	secret   = "cluster-signing-secret"
)

// cluster is the running system.
type cluster struct {
	t        testing.TB
	bin      string
	env      []string // what every lucy process gets
	gwAddr   string
	gw       *proc
	workers  [2]*proc
	wAddrs   [2]string
	slack    *localslack.Server
	person   *slack.Client
	temporal client.Client
	models   [2]*fakellm.Server // one per worker, so that a call names the worker that made it
	dataDir  string
	started  time.Time
}

func TestCluster(t *testing.T) {
	sc := newScript()
	c := startCluster(t, sc.reply)
	t.Run("a conversation with a tool call is answered once", c.toolCallAnsweredOnce)
	t.Run("a worker killed mid-model-call", func(t *testing.T) { c.workerKilledMidCall(t, sc) })
	t.Run("the gateway restarted while events arrive", c.gatewayRestarted)
	t.Run("a schedule made by a tool fires on the other worker", c.scheduleFiresElsewhere)
	t.Logf("whole test: %s", time.Since(c.started).Round(time.Second))
}

// startCluster builds the binaries and starts everything, in the deploy README's order; model is
// the fake model's script (worker is 0 or 1: which worker's call it is). Skipped without PostgreSQL.
func startCluster(t testing.TB, model func(worker int, req fakellm.Request) fakellm.Reply) *cluster {
	pgBin, err := findPostgres()
	if err != nil {
		t.Skip(err)
	}
	start := time.Now()
	serverBin, lucyBin := buildOnce(t)
	t.Logf("built in %s", time.Since(start).Round(time.Second))

	pg := startPostgres(t, pgBin)
	ports := freePorts(t, 4)
	var portList []string
	for _, p := range ports {
		portList = append(portList, strconv.Itoa(p))
	}
	// The server runs with the dynamic configuration the compose cluster mounts (its queue settings).
	dynConf, err := filepath.Abs(filepath.Join("..", "..", "deploy", "compose", "dynamicconfig.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	srv := startProc(t, "temporal-server", nil, nil, serverBin, "-pg", pg.addr, "-ports", strings.Join(portList, ","), "-setup", "-log-level", "error",
		"-dynamic-config", dynConf)
	srv.waitOutput(t, "serving on", 3*time.Minute)
	temporalAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])

	ls, slackURL := localslack.NewTestServer(t, localslack.Options{Token: botToken, Team: team, UserTokens: map[string]string{"xoxp-person": human}})
	c := &cluster{t: t, bin: lucyBin, slack: ls, person: slack.New("xoxp-person", slack.OptionAPIURL(slackURL)), started: start}
	for i := range c.models {
		c.models[i] = fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply { return model(i, req) })
	}
	c.dataDir = t.TempDir()
	c.env = []string{
		"TEMPORAL_ADDRESS=" + temporalAddr, "TEMPORAL_NAMESPACE=default",
		"SLACK_BOT_TOKEN=" + botToken, "SLACK_API_URL=" + slackURL, "SLACK_SIGNING_SECRET=" + secret,
		"OPENAI_API_KEY=sk-cluster", "LUCY_MODEL_DEFAULT=fake", "LUCY_DATA_DIR=" + c.dataDir,
		"LUCY_LOG_LEVEL=warn", "LUCY_MIN_JOB_INTERVAL=1m", "LUCY_SECRETS_KEY=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
		// One person sends every message here, hundreds a minute in the benchmarks: no flood limit.
		"LUCY_USER_EVENTS_PER_MINUTE=0",
	}

	// The deploy README's order: setup once, then the processes.
	setup := exec.Command(lucyBin, "setup")
	setup.Env = append(os.Environ(), c.env...)
	if out, err := setup.CombinedOutput(); err != nil || !strings.Contains(string(out), "`lucy worker` can start") {
		t.Fatalf("lucy setup: %v\n%s", err, out)
	}
	wports := freePorts(t, 3)
	for i := range c.workers {
		c.wAddrs[i] = fmt.Sprintf("127.0.0.1:%d", wports[i])
		c.startWorker(i)
	}
	c.gwAddr = fmt.Sprintf("127.0.0.1:%d", wports[2])
	c.startGateway()
	if c.temporal, err = client.Dial(client.Options{HostPort: temporalAddr}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.temporal.Close)
	t.Logf("cluster up in %s", time.Since(start).Round(time.Second))
	return c
}

func (c *cluster) startWorker(i int) {
	c.t.Helper()
	env := append([]string{"OPENAI_BASE_URL=" + c.models[i].BaseURL(), "LUCY_WORKER_HTTP_ADDR=" + c.wAddrs[i]}, c.env...)
	c.workers[i] = startProc(c.t, fmt.Sprintf("worker %d", i), env, nil, c.bin, "worker")
	c.workers[i].waitReady(c.t, "http://"+c.wAddrs[i]+"/readyz", 2*time.Minute)
}

func (c *cluster) startGateway() {
	c.t.Helper()
	c.gw = startProc(c.t, "gateway", append([]string{"LUCY_HTTP_ADDR=" + c.gwAddr}, c.env...), nil, c.bin, "gateway")
	c.gw.waitReady(c.t, "http://"+c.gwAddr+"/readyz", time.Minute)
}

// The first conversation: the model calls a tool (a CSV shared in the thread), then answers.
func (c *cluster) toolCallAnsweredOnce(t *testing.T) {
	before := c.slack.Calls("files.completeUploadExternal")
	root := c.say("<@ULUCY> make the signups CSV")
	c.mustEvent(t, "Ev-signups", root)
	waitFor(t, "the answer", time.Minute, func() bool { return c.answers(root, "Here is the signups CSV") == 1 })
	time.Sleep(time.Second) // a second answer or upload, if any, would come now
	if n := c.answers(root, "Here is the signups CSV"); n != 1 {
		t.Errorf("%d answers, want 1", n)
	}
	if n := c.slack.Calls("files.completeUploadExternal") - before; n != 1 {
		t.Errorf("the CSV was shared %d times, want once", n)
	}
}

// The worker running a turn dies (SIGKILL) while its model call is in flight: the other worker
// takes the call over when its heartbeat times out, and the run ends with one answer; the tool
// that ran before is not run again.
func (c *cluster) workerKilledMidCall(t *testing.T, sc *script) {
	before := c.slack.Calls("files.completeUploadExternal")
	root := c.say("<@ULUCY> write the launch plan CSV")
	c.mustEvent(t, "Ev-plan", root)
	var victim int
	select {
	case victim = <-sc.planHeld:
	case <-time.After(time.Minute):
		t.Fatal("the model call after the tool never came")
	}
	c.workers[victim].kill()
	killed := time.Now()
	close(sc.planRelease)
	waitFor(t, "the answer from the other worker", 90*time.Second, func() bool { return c.answers(root, "The launch plan is ready") >= 1 })
	t.Logf("answered %s after the kill", time.Since(killed).Round(100*time.Millisecond))
	if got := sc.planAnsweredBy.Load(); got != int32(1-victim) {
		t.Errorf("the answer came from worker %d's model, want the survivor %d", got, 1-victim)
	}
	time.Sleep(time.Second)
	if n := c.answers(root, "The launch plan is ready"); n != 1 {
		t.Errorf("%d answers, want 1", n)
	}
	if n := c.slack.Calls("files.completeUploadExternal") - before; n != 1 {
		t.Errorf("the tool ran %d times (CSV shares), want once", n)
	}
	c.startWorker(victim) // two workers again for what follows
}

// The gateway dies (SIGKILL) and comes back while a stream of events arrives. Slack retries an
// event it got no 200 for; every event that was acknowledged must reach its thread's lane, so
// each of them is answered, once.
func (c *cluster) gatewayRestarted(t *testing.T) {
	const n = 12
	roots := make([]string, n)
	for i := range roots {
		roots[i] = c.say(fmt.Sprintf("<@ULUCY> note event %d", i))
	}
	acked := make([]atomic.Bool, n)
	var retries atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 150 * time.Millisecond)
			deadline := time.Now().Add(90 * time.Second)
			for time.Now().Before(deadline) {
				if resp, err := c.event(fmt.Sprintf("Ev-burst-%d", i), roots[i]); err == nil && resp == http.StatusOK {
					acked[i].Store(true)
					return
				}
				retries.Add(1)
				time.Sleep(300 * time.Millisecond) // Slack retries too, later than this
			}
		}()
	}
	time.Sleep(600 * time.Millisecond)
	c.gw.kill()
	time.Sleep(300 * time.Millisecond)
	c.startGateway()
	wg.Wait()
	t.Logf("%d deliveries were refused or cut while the gateway restarted, and retried", retries.Load())
	for i := range n {
		if !acked[i].Load() {
			t.Fatalf("event %d was never acknowledged", i)
		}
	}
	for i, root := range roots {
		want := fmt.Sprintf("Noted event %d.", i)
		waitFor(t, "the answer to event "+strconv.Itoa(i), time.Minute, func() bool { return c.answers(root, want) >= 1 })
	}
	time.Sleep(time.Second)
	for i, root := range roots {
		if k := c.answers(root, fmt.Sprintf("Noted event %d.", i)); k != 1 {
			t.Errorf("event %d: %d answers, want 1", i, k)
		}
	}
}

// A person asks for a recurring job; the tool creates the Temporal Schedule after their approval
// (a button click through the gateway). The worker that ran the tool then dies, and the firing
// runs on the other one and posts in the thread.
func (c *cluster) scheduleFiresElsewhere(t *testing.T) {
	root := c.say("<@ULUCY> every minute, remind us of the standup")
	c.mustEvent(t, "Ev-standup", root)
	var value string
	waitFor(t, "the approval prompt", time.Minute, func() bool { value = c.approvalValue(root); return value != "" })
	c.click(t, value)
	waitFor(t, "the job's creation", time.Minute, func() bool { return c.answers(root, "The standup job is set") == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	creator := c.toolWorker(t, ctx, "lucy_create_cron")
	if creator < 0 {
		t.Fatal("no worker ran lucy_create_cron")
	}
	c.workers[creator].kill()
	t.Logf("worker %d created the schedule and was killed", creator)
	waitFor(t, "the job's firing to post", 2*time.Minute, func() bool { return c.answers(root, "Standup time!") >= 1 })

	// Every workflow task and activity of the firing ran on the surviving worker.
	resp, err := c.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: "WorkflowType = 'scheduled_job'",
	})
	if err != nil || len(resp.GetExecutions()) == 0 {
		t.Fatalf("the firing's workflow: %v %v", err, resp)
	}
	survivor := c.workers[1-creator].cmd.Process.Pid
	for _, ex := range resp.GetExecutions() {
		for _, id := range c.identities(t, ctx, ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId()) {
			if !strings.HasPrefix(id, strconv.Itoa(survivor)+"@") {
				t.Errorf("the firing %s ran on %s, not on the surviving worker (pid %d)", ex.GetExecution().GetWorkflowId(), id, survivor)
			}
		}
	}
	h := c.temporal.ScheduleClient().GetHandle(ctx, "cron:"+team+":standup")
	_ = h.Delete(ctx)
}

// ---- Slack side ----

func (c *cluster) say(text string) string {
	c.t.Helper()
	_, ts, err := c.person.PostMessage(channel, slack.MsgOptionText(text, false))
	if err != nil {
		c.t.Fatal(err)
	}
	return ts
}

// event delivers an app_mention for the message at ts, signed as Slack signs, and returns the
// gateway's status.
func (c *cluster) event(id, ts string) (int, error) {
	text := ""
	for _, m := range c.slack.Messages(channel, "") {
		if m.TS == ts {
			text = m.Text
		}
	}
	body, _ := json.Marshal(map[string]any{
		"token": "x", "team_id": team, "api_app_id": localslack.DefaultAppID, "type": "event_callback", "event_id": id,
		"event_time": time.Now().Unix(),
		"event":      map[string]any{"type": "app_mention", "user": human, "text": text, "ts": ts, "channel": channel, "event_ts": ts},
	})
	return c.post("/slack/events", "application/json", body)
}

func (c *cluster) mustEvent(t testing.TB, id, ts string) {
	t.Helper()
	if code, err := c.event(id, ts); err != nil || code != http.StatusOK {
		t.Fatalf("event %s: %d %v", id, code, err)
	}
}

func (c *cluster) click(t *testing.T, value string) {
	t.Helper()
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "team": map[string]string{"id": team}, "user": map[string]string{"id": human},
		"channel": map[string]string{"id": channel}, "trigger_id": "trig-1", "response_url": "",
		"actions": []map[string]string{{"action_id": "lucy_approve", "value": value, "block_id": "lucy_approval", "type": "button"}},
	})
	code, err := c.post("/slack/interactivity", "application/x-www-form-urlencoded", []byte("payload="+url.QueryEscape(string(payload))))
	if err != nil || code != http.StatusOK {
		t.Fatalf("the click: %d %v", code, err)
	}
}

func (c *cluster) post(path, ctype string, body []byte) (int, error) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+c.gwAddr+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	localslack.Sign(req, body, secret, time.Now())
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// answers counts Lucy's messages in the thread that contain want.
func (c *cluster) answers(root, want string) int {
	n := 0
	for _, m := range c.slack.Messages(channel, root) {
		if m.BotID != "" && strings.Contains(m.Text, want) {
			n++
		}
	}
	return n
}

func (c *cluster) approvalValue(root string) string {
	for _, m := range c.slack.Messages(channel, root) {
		if m.BotID == "" || !bytes.Contains(m.Blocks, []byte("lucy_approve")) {
			continue
		}
		var blocks []struct {
			Elements []struct {
				ActionID string `json:"action_id"`
				Value    string `json:"value"`
			} `json:"elements"`
		}
		_ = json.Unmarshal(m.Blocks, &blocks)
		for _, b := range blocks {
			for _, e := range b.Elements {
				if e.ActionID == "lucy_approve" {
					return e.Value
				}
			}
		}
	}
	return ""
}

// ---- Temporal side ----

// toolWorker is the worker (0 or 1) that ran the last successful ExecuteTool of tool, from the
// agent runs' histories (the SDK's default identity starts with the worker's pid); -1 if none.
func (c *cluster) toolWorker(t *testing.T, ctx context.Context, tool string) int {
	t.Helper()
	resp, err := c.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: "WorkflowType = 'agent_run'"})
	if err != nil {
		t.Fatal(err)
	}
	identity := ""
	for _, ex := range resp.GetExecutions() {
		scheduled := map[int64]bool{}
		it := c.temporal.GetWorkflowHistory(ctx, ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "ExecuteTool" {
				for _, p := range a.GetInput().GetPayloads() {
					if bytes.Contains(p.GetData(), []byte(tool)) {
						scheduled[ev.GetEventId()] = true
					}
				}
			}
			if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] {
				identity = a.GetIdentity()
			}
		}
	}
	for i, w := range c.workers {
		if identity != "" && strings.HasPrefix(identity, strconv.Itoa(w.cmd.Process.Pid)+"@") {
			return i
		}
	}
	return -1
}

// identities are the workers that ran the workflow's tasks and activities.
func (c *cluster) identities(t *testing.T, ctx context.Context, id, run string) []string {
	t.Helper()
	var out []string
	it := c.temporal.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetWorkflowTaskStartedEventAttributes(); a != nil {
			out = append(out, a.GetIdentity())
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			out = append(out, a.GetIdentity())
		}
	}
	return out
}

// ---- the model ----

// script is the fake model's part in TestCluster: each conversation is recognised by the person's
// words.
type script struct {
	planHeld       chan int
	planRelease    chan struct{}
	planCalls      atomic.Int32
	planAnsweredBy atomic.Int32
}

func newScript() *script {
	m := &script{planHeld: make(chan int, 1), planRelease: make(chan struct{})}
	m.planAnsweredBy.Store(-1)
	return m
}

func (m *script) reply(worker int, req fakellm.Request) fakellm.Reply {
	last := req.Messages[len(req.Messages)-1]
	afterTool := last.Role == "tool"
	lastUser := ""
	for _, msg := range req.Messages {
		if msg.Role == "user" {
			lastUser = msg.Text()
		}
	}
	switch {
	case strings.Contains(lastUser, "Post the standup reminder"):
		return fakellm.Reply{Content: "Standup time!"}
	case strings.Contains(lastUser, "signups CSV"):
		if afterTool {
			return fakellm.Reply{Content: "Here is the signups CSV."}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_generate_csv", `{"filename":"signups.csv","rows":[["week","signups"],["1","40"]]}`)}}
	case strings.Contains(lastUser, "launch plan CSV"):
		if !afterTool {
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_generate_csv", `{"filename":"plan.csv","rows":[["phase"],["one"],["two"],["three"]]}`)}}
		}
		if m.planCalls.Add(1) == 1 {
			m.planHeld <- worker // the test kills this worker while the call is in flight
			return fakellm.Reply{Hold: m.planRelease, Content: "The launch plan is ready (from the dead worker)."}
		}
		m.planAnsweredBy.Store(int32(worker))
		return fakellm.Reply{Content: "The launch plan is ready."}
	case strings.Contains(lastUser, "remind us of the standup"):
		if afterTool {
			return fakellm.Reply{Content: "The standup job is set."}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_create_cron",
			`{"name":"standup","schedule":"* * * * *","instruction":"Post the standup reminder.","timezone":"UTC","in_this_thread":true}`)}}
	case strings.Contains(lastUser, "note event"):
		i := strings.LastIndex(lastUser, "event ")
		return fakellm.Reply{Content: "Noted " + strings.TrimSpace(lastUser[i:]) + "."}
	}
	return fakellm.Reply{Content: "OK."}
}
