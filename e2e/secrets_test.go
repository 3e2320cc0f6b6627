package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/lucy-agent/lucy/codec"
	"github.com/lucy-agent/lucy/gateway"
	"github.com/lucy-agent/lucy/integrations/mcp"
	"github.com/lucy-agent/lucy/integrations/mcp/mcptest"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/logging"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/worker"
)

// The keys of TestNoKeyReachesHistoryLogsModelOrSlack: one a person types into the Add key form (an
// OpenAPI service's), one an operator stores for an MCP server, one a person pastes into a message.
// The services echo the first two back, as a careless server would.
const (
	formKey   = "bk-7Qz2Lx9Vr4Tn8Wp3Ys6Jd1Hf5Gm0Kc"
	mcpKey    = "vt-3Hs8Dk2Lq7Zx5Cn9Bw4Rm1Tj6Yp0Fg"
	pastedKey = "ghp_9aZ8bY7cX6dW5eV4fU3gT2hS1iR0jQkPlOmN"
)

// A secret never reaches workflow history (raw, with and without the payload codec), the logs, the
// model provider or what Lucy posts in Slack, through the whole flow a team meets: a key pasted into a
// message, an OpenAPI service connected from chat whose key is asked with the Add key button and typed
// into the form (over signed interactivity payloads), whose "I added the key" starts the next request,
// the service called with the stored key, and an MCP server called with an operator's stored bearer
// token; both services echo the key they received.
func TestNoKeyReachesHistoryLogsModelOrSlack(t *testing.T) {
	t.Run("plain", func(t *testing.T) { noKeyLeaks(t, nil, nil) })
	t.Run("codec", func(t *testing.T) {
		keys, err := codec.ParseKeys("k1:" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
		if err != nil {
			t.Fatal(err)
		}
		dc, err := codec.DataConverter(keys)
		if err != nil {
			t.Fatal(err)
		}
		c, err := codec.New(keys)
		if err != nil {
			t.Fatal(err)
		}
		noKeyLeaks(t, dc, c)
	})
}

// billingAPI is an OpenAPI service that checks its key and echoes it back in its answer.
type billingAPI struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls int
}

func newBillingAPI(t *testing.T) *billingAPI {
	b := &billingAPI{}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/openapi.json" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"openapi": "3.0.3", "info": {"title": "Billing", "version": "1"},
 "servers": [{"url": %q}],
 "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-API-Key"}}},
 "security": [{"key": []}],
 "paths": {"/invoices": {"get": {"operationId": "listInvoices", "summary": "List the invoices",
   "responses": {"200": {"description": "The invoices", "content": {"application/json": {"schema": {"type": "object"}}}}}}}}}`,
				b.srv.URL+"/v1")
			return
		}
		b.mu.Lock()
		b.calls++
		b.mu.Unlock()
		if r.Header.Get("X-API-Key") != formKey {
			http.Error(w, `{"error": "bad key"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"invoices": [{"id": "INV-7", "total": 420}], "debug": "authenticated with %s"}`, r.Header.Get("X-API-Key"))
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func noKeyLeaks(t *testing.T, dc converter.DataConverter, c *codec.Codec) {
	api := newBillingAPI(t)
	vault := mcptest.New(mcptest.Normal, "")
	vaultMCP := mcptest.Handler(vault)
	vaultHTTP := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+mcpKey {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		vaultMCP.ServeHTTP(w, r)
	}))
	t.Cleanup(vaultHTTP.Close)

	var billingTool string
	s := newStackWith(t, func(n int, req fakellm.Request) fakellm.Reply {
		if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Text(), "You supervise") {
			return fakellm.Reply{Content: "C"}
		}
		if len(req.Tools) == 0 { // planner, summarizer, compactor
			return fakellm.Reply{Content: "summary"}
		}
		var results []string
		keyAdded := false
		for _, m := range req.Messages {
			switch m.Role {
			case "tool":
				results = append(results, m.Text())
			case "user":
				keyAdded = keyAdded || strings.Contains(m.Text(), "I added the key for `billing`")
			}
		}
		for _, tl := range req.Tools {
			if strings.HasPrefix(tl.Function.Name, "lucy_custom_billing_") {
				billingTool = tl.Function.Name
			}
		}
		switch {
		case !keyAdded && len(results) == 0:
			// The first request: connect the service; its key is asked with the button.
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("r1", "lucy_resolve_custom_integration",
				fmt.Sprintf(`{"url": %q, "name": "billing"}`, api.srv.URL+"/openapi.json"))}}
		case !keyAdded:
			return fakellm.Reply{Content: "Connected billing: please click Add key and enter its key, then I'll carry on."}
		case len(results) == 0:
			// The form's "I added the key" starts the next request, which is offered the service.
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("b1", billingTool, `{}`)}}
		case len(results) == 1:
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("m1", "mcp__vault__whoami", `{}`)}}
		}
		// The answer repeats every tool result, as a model might: whatever a tool let through would
		// reach Slack here. Each on one line: a JSON document on lines of its own is a raw dump that
		// delivery replaces (output.Sanitize), which would hide a leak rather than show one.
		for i, r := range results {
			results[i] = strings.Join(strings.Fields(r), " ")
		}
		return fakellm.Reply{Content: "All done. " + strings.Join(results, " | ")}
	}, dc)

	// Logs are kept to be read; the worker is this test's, with the operator's MCP server (its bearer
	// token a stored credential), and the gateway has the credential store and views.open.
	var logs syncBuffer
	log := logging.New(&logs, "debug", "json")
	creds, err := worker.Credentials(s.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := creds.Put(context.Background(), team, "vault", mcpKey, "operator"); err != nil {
		t.Fatal(err)
	}
	s.stopWorker()
	s.startWorkerWith(worker.Deps{Log: log, MCPServers: []mcp.Server{{Name: "vault", URL: vaultHTTP.URL + "/mcp", Credential: "vault"}}})
	s.gw.Close()
	gw := gateway.New(gateway.Options{Handoff: gateway.NewTemporalHandoff(s.client, s.cfg.ApprovalKey), BotUserID: "ULUCY", BotID: "BLUCY",
		Team: team, Log: log, Credentials: creds, Admins: s.cfg.AdminUsers, Views: slack.New("xoxb-test", slack.OptionAPIURL(s.slackURL))})
	s.gw = httptest.NewServer(gw.HTTPHandler(secret))
	t.Cleanup(s.gw.Close)

	text := "<@ULUCY> connect our billing API, here is the token " + pastedKey + " if you need it, and tell me what the vault says about me"
	ts := s.say(text, "")
	s.event("app_mention", "Ev-keys", text, ts, "", human)

	// Connecting the service asks the person first (the prompt shows its address and key).
	var approval string
	s.waitFor("the approval to connect billing", 90*time.Second, func() bool {
		approval = s.approvalValue(ts)
		return approval != ""
	})
	s.click(human, approval, "lucy_approve")

	// The service asks for its key: the button, the form, the key typed in it.
	var button string
	s.waitFor("the Add key button", 90*time.Second, func() bool {
		for _, m := range s.botMessages(ts) {
			if bytes.Contains(m.Blocks, []byte(slackwire.AddKeyAction)) {
				button = m.TS
			}
		}
		return button != ""
	})
	click, err := s.slack.Click(human, channel, button, slackwire.AddKeyAction)
	if err != nil {
		t.Fatal(err)
	}
	s.interact(click)
	views := s.slack.Views()
	if len(views) != 1 {
		t.Fatalf("the click opened %d forms", len(views))
	}
	s.waitFor("the first answer", 60*time.Second, func() bool { return s.answered(ts, "then I'll carry on") })
	submit, err := s.slack.SubmitView(views[0].ID, map[string]map[string]string{slackwire.AddKeyInputBlock: {slackwire.AddKeyInputAction: formKey}})
	if err != nil {
		t.Fatal(err)
	}
	s.interact(submit)
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range s.slack.Messages(channel, ts) {
				t.Logf("message %s from %s: %.300s", m.TS, m.User, m.Text)
			}
			for _, r := range s.llm.Requests() {
				if len(r.Tools) > 0 {
					t.Logf("model call: %d messages; last: %.300s", len(r.Messages), r.Messages[len(r.Messages)-1].Text())
				}
			}
			t.Logf("logs: %.6000s", logs.Bytes())
		}
	})
	s.waitFor("the answer", 120*time.Second, func() bool { return s.answered(ts, "All done.") })

	// The services were called with their keys, and each echoed its key back.
	api.mu.Lock()
	calls := api.calls
	api.mu.Unlock()
	if calls != 1 {
		t.Errorf("the billing API was called %d times, want once (with the key from the form)", calls)
	}
	if got := vault.Calls("whoami"); got != 1 {
		t.Errorf("the vault's whoami ran %d times, want once", got)
	}
	var answer string
	for _, m := range s.botMessages(ts) {
		if strings.Contains(m.Text, "All done.") {
			answer = m.Text
		}
	}
	if !strings.Contains(answer, "INV-7") || !strings.Contains(answer, "you are Bearer") {
		t.Errorf("the answer lacks what the services returned: %q", answer)
	}

	leaks := []string{formKey, mcpKey, pastedKey, base64.StdEncoding.EncodeToString([]byte(formKey)),
		base64.StdEncoding.EncodeToString([]byte(mcpKey)), base64.StdEncoding.EncodeToString([]byte(pastedKey))}
	check := func(where string, data []byte) {
		t.Helper()
		for _, k := range leaks {
			if bytes.Contains(data, []byte(k)) {
				t.Errorf("%s holds a key (%.6s…)", where, k)
			}
		}
	}
	// Every workflow's history, every run of it: the raw events and every payload in them, decoded
	// by the codec when there is one.
	histories := 0
	for _, ex := range s.allExecutions(t) {
		histories++
		for _, ev := range s.historyOf(t, ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId()) {
			raw, err := protojson.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			where := fmt.Sprintf("%s event %d (%s)", ex.GetExecution().GetWorkflowId(), ev.GetEventId(), ev.GetEventType())
			check(where, raw)
			for _, p := range eventPayloads(ev) {
				check(where+" payload", p.GetData())
				if c != nil {
					dec, err := c.Decode([]*commonpb.Payload{p})
					if err != nil {
						t.Fatalf("%s: decode: %v", where, err)
					}
					check(where+" decoded payload", dec[0].GetData())
				}
			}
		}
	}
	if histories < 2 {
		t.Fatalf("%d workflow histories read, want the lane and the run at least", histories)
	}
	check("the logs", logs.Bytes())
	reqs, err := json.Marshal(s.llm.Requests())
	if err != nil {
		t.Fatal(err)
	}
	check("what was sent to the model provider", reqs)
	if !bytes.Contains(reqs, []byte("[secret removed]")) {
		t.Error("the model never saw the pasted key's marker")
	}
	for _, m := range s.slack.Messages(channel, ts) {
		if m.User == human {
			continue // the person's own messages: what they typed stays theirs, in their Slack
		}
		b, _ := json.Marshal(m)
		check("a message Lucy posted ("+m.TS+")", b)
	}
}

// interact posts an interactivity payload (a click, a form's submission) to the gateway, signed.
func (s *stack) interact(payload []byte) {
	s.tb.Helper()
	body := []byte("payload=" + url.QueryEscape(string(payload)))
	if resp := s.post("/slack/interactivity", body, "application/x-www-form-urlencoded", secret); resp.StatusCode != http.StatusOK {
		s.tb.Fatalf("interactivity answered %d", resp.StatusCode)
	}
}

// allExecutions lists every workflow execution of the namespace, closed and running.
func (s *stack) allExecutions(t *testing.T) []*workflowpb.WorkflowExecutionInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*workflowpb.WorkflowExecutionInfo
	var token []byte
	for {
		resp, err := s.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: s.cfg.TemporalNamespace, PageSize: 1000, NextPageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, resp.GetExecutions()...)
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out
		}
	}
}

// historyOf reads one run's whole history.
func (s *stack) historyOf(t *testing.T, id, runID string) []*historypb.HistoryEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	it := s.client.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var out []*historypb.HistoryEvent
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// eventPayloads returns every payload an event holds, at any depth (inputs, results, failures'
// details, memos, headers).
func eventPayloads(ev *historypb.HistoryEvent) []*commonpb.Payload {
	var out []*commonpb.Payload
	var walk func(m protoreflect.Message)
	walk = func(m protoreflect.Message) {
		if p, ok := m.Interface().(*commonpb.Payload); ok {
			out = append(out, p)
			return
		}
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := 0; i < v.List().Len(); i++ {
					walk(v.List().Get(i).Message())
				}
			case fd.IsMap() && fd.MapValue().Message() != nil:
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					walk(mv.Message())
					return true
				})
			case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
				walk(v.Message())
			}
			return true
		})
	}
	walk(ev.ProtoReflect())
	return out
}

// syncBuffer is a bytes.Buffer the worker's and the gateway's goroutines may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.b.Bytes()...)
}
