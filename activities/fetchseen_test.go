package activities

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc"

	"github.com/lucy-agent/lucy/tools"
)

// testRunID is the workflow ID the SDK's TestActivityEnvironment gives the activity's run.
const testRunID = "default-test-workflow-id"

// fakeFrontend answers GetWorkflowExecutionHistoryReverse from recorded events, per workflow ID,
// the way the Temporal frontend does: newest first. Everything else is unimplemented.
type fakeFrontend struct {
	workflowservice.WorkflowServiceClient
	histories map[string][]*historypb.HistoryEvent
	down      bool
}

func (f *fakeFrontend) GetWorkflowExecutionHistoryReverse(_ context.Context, req *workflowservice.GetWorkflowExecutionHistoryReverseRequest, _ ...grpc.CallOption) (*workflowservice.GetWorkflowExecutionHistoryReverseResponse, error) {
	if f.down {
		return nil, errors.New("frontend unavailable")
	}
	evs := slices.Clone(f.histories[req.GetExecution().GetWorkflowId()])
	slices.Reverse(evs)
	return &workflowservice.GetWorkflowExecutionHistoryReverseResponse{History: &historypb.History{Events: evs}}, nil
}

type frontendClient struct {
	client.Client
	svc *fakeFrontend
}

func (c frontendClient) WorkflowService() workflowservice.WorkflowServiceClient { return c.svc }

// historyBuilder writes a run's events as the server records them.
type historyBuilder struct {
	t      *testing.T
	events []*historypb.HistoryEvent
}

func (b *historyBuilder) add(ev *historypb.HistoryEvent) int64 {
	ev.EventId = int64(len(b.events) + 1)
	b.events = append(b.events, ev)
	return ev.EventId
}

func (b *historyBuilder) started(in any, parent string) *historyBuilder {
	attrs := &historypb.WorkflowExecutionStartedEventAttributes{Input: payloads(b.t, in)}
	if parent != "" {
		attrs.ParentWorkflowExecution = &commonpb.WorkflowExecution{WorkflowId: parent, RunId: "parent-run"}
	}
	b.add(&historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
		Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: attrs}})
	return b
}

func (b *historyBuilder) activity(id, typ string, in, out any) *historyBuilder {
	sched := b.add(&historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
		Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
			ActivityId: id, ActivityType: &commonpb.ActivityType{Name: typ}, Input: payloads(b.t, in)}}})
	b.add(&historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
		Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{
			ScheduledEventId: sched, Result: payloads(b.t, out)}}})
	return b
}

func (b *historyBuilder) tool(id string, in ExecuteToolInput, content string) *historyBuilder {
	return b.activity(id, "ExecuteTool", in, ToolResult{Content: content})
}

func (b *historyBuilder) signal(name string, v any) *historyBuilder {
	b.add(&historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
		Attributes: &historypb.HistoryEvent_WorkflowExecutionSignaledEventAttributes{WorkflowExecutionSignaledEventAttributes: &historypb.WorkflowExecutionSignaledEventAttributes{
			SignalName: name, Input: payloads(b.t, v)}}})
	return b
}

func (b *historyBuilder) child(id string) *historyBuilder {
	b.add(&historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED,
		Attributes: &historypb.HistoryEvent_ChildWorkflowExecutionStartedEventAttributes{ChildWorkflowExecutionStartedEventAttributes: &historypb.ChildWorkflowExecutionStartedEventAttributes{
			WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: "child-run"}}}})
	return b
}

// runInput is the part of workflows.RunInput the guard reads (activities cannot import workflows).
func runInput(text string) map[string]any {
	return map[string]any{"lane": map[string]any{"team": "T1"}, "message": map[string]any{"team": "T1", "text": text}, "requester": "U1"}
}

func fetchArgs(u string) string { return fmt.Sprintf(`{"url":%q}`, u) }

// The fetch guard reads the run's history through CachedHistory, as the worker does, from events
// shaped like the server's: a URL that carries data is fetched without approval when the person
// wrote it, the thread or a page of the request showed it, or a sub-agent read it; otherwise it
// waits for approval and nothing reaches the server.
func TestExecuteToolFetchGuard(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "stored")
	}))
	t.Cleanup(srv.Close)
	blob := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("alice: the launch moves to May 3rd. ", 40)))[:1500]
	target := srv.URL + "/x?d=" + url.QueryEscape(blob)
	reg := testRunner(t, testDeps{DataDir: t.TempDir(), AllowPrivateNetworks: true})
	link := func(s string) string { return "Read [the archive](" + s + ") for details." }
	fetchIn := func(u string) ExecuteToolInput {
		return ExecuteToolInput{Name: tools.WebFetch, Arguments: fetchArgs(u), Team: "T1", CallID: "c9"}
	}
	// The guard a person approves for target, as the tool computes it.
	var guard string

	tests := []struct {
		name      string
		histories func(t *testing.T) map[string]*historyBuilder
		seen      bool
	}{
		{"not seen anywhere", func(t *testing.T) map[string]*historyBuilder {
			return map[string]*historyBuilder{testRunID: (&historyBuilder{t: t}).started(runInput("summarize #general"), "lane").
				tool("tool-1", fetchIn(srv.URL+"/page"), "URL: "+srv.URL+"/page\n\nno links here")}
		}, false},
		{"in the person's message", func(t *testing.T) map[string]*historyBuilder {
			return map[string]*historyBuilder{testRunID: (&historyBuilder{t: t}).started(runInput("what does <"+target+"> say?"), "lane")}
		}, true},
		{"in a person's message of the thread, Slack-escaped", func(t *testing.T) map[string]*historyBuilder {
			escaped := strings.ReplaceAll(target, "&", "&amp;")
			return map[string]*historyBuilder{testRunID: (&historyBuilder{t: t}).started(runInput("and that link?"), "lane").
				activity("thread", "LoadThread", LoadThreadInput{}, ThreadHistory{Messages: []ThreadMessage{{Role: "user", Text: "see <" + escaped + ">"}}})}
		}, true},
		{"only in Lucy's own earlier answer", func(t *testing.T) map[string]*historyBuilder {
			return map[string]*historyBuilder{testRunID: (&historyBuilder{t: t}).started(runInput("go on"), "lane").
				activity("thread", "LoadThread", LoadThreadInput{}, ThreadHistory{Messages: []ThreadMessage{{Role: "assistant", Text: link(target)}}})}
		}, false},
		{"in a message folded into the run", func(t *testing.T) map[string]*historyBuilder {
			return map[string]*historyBuilder{testRunID: (&historyBuilder{t: t}).started(runInput("read this"), "lane").
				signal(messageSignal, map[string]any{"text": "also <" + target + ">"})}
		}, true},
		{"in a fetched page", func(t *testing.T) map[string]*historyBuilder {
			return map[string]*historyBuilder{testRunID: (&historyBuilder{t: t}).started(runInput("read the page"), "lane").
				tool("tool-1", fetchIn(srv.URL+"/page"), "URL: "+srv.URL+"/page\n\n"+link(target))}
		}, true},
		{"in a search result", func(t *testing.T) map[string]*historyBuilder {
			return map[string]*historyBuilder{testRunID: (&historyBuilder{t: t}).started(runInput("search"), "lane").
				tool("tool-1", ExecuteToolInput{Name: tools.WebSearch, Arguments: `{"query":"launch archive"}`}, "1. Archive\n   "+target+"\n   The archive.")}
		}, true},
		{"in a script's output", func(t *testing.T) map[string]*historyBuilder {
			return map[string]*historyBuilder{testRunID: (&historyBuilder{t: t}).started(runInput("compute"), "lane").
				tool("tool-1", ExecuteToolInput{Name: tools.RunScript, Arguments: `{"code":"console.log(u)"}`}, target)}
		}, false},
		{"echoed by a tool that was given it", func(t *testing.T) map[string]*historyBuilder {
			return map[string]*historyBuilder{testRunID: (&historyBuilder{t: t}).started(runInput("search"), "lane").
				tool("tool-1", ExecuteToolInput{Name: tools.WebSearch, Arguments: fmt.Sprintf(`{"query":%q}`, target)}, "No results for "+target)}
		}, false},
		{"asked for earlier, not approved", func(t *testing.T) map[string]*historyBuilder {
			return map[string]*historyBuilder{testRunID: (&historyBuilder{t: t}).started(runInput("go"), "lane").
				activity("tool-1", "ExecuteTool", fetchIn(target), ToolResult{Content: "Nothing was fetched: " + target,
					NeedsApproval: &ApprovalNeed{Summary: "s", Guard: "g"}})}
		}, false},
		{"approved earlier in the request", func(t *testing.T) map[string]*historyBuilder {
			in := fetchIn(target)
			in.Approved, in.Guard = true, guard
			return map[string]*historyBuilder{testRunID: (&historyBuilder{t: t}).started(runInput("go"), "lane").
				tool("tool-2", in, "URL: "+target+"\n\nstored")}
		}, true},
		{"a sub-agent, in its parent's fetched page", func(t *testing.T) map[string]*historyBuilder {
			parent := "lane:T1:C1:1.0:run:1:1.0"
			return map[string]*historyBuilder{
				parent: (&historyBuilder{t: t}).started(runInput("research the launch"), "lane").
					tool("tool-1", fetchIn(srv.URL+"/page"), link(target)).child(testRunID),
				testRunID: (&historyBuilder{t: t}).started(map[string]any{"run": runInput("research the launch"), "parent": parent,
					"task": map[string]any{"task": "open " + target}}, parent),
			}
		}, true},
		{"a sub-agent, only in the task its parent's model wrote", func(t *testing.T) map[string]*historyBuilder {
			parent := "lane:T1:C1:1.0:run:1:1.0"
			return map[string]*historyBuilder{
				parent: (&historyBuilder{t: t}).started(runInput("research the launch"), "lane").child(testRunID),
				testRunID: (&historyBuilder{t: t}).started(map[string]any{"run": runInput("research the launch"), "parent": parent,
					"task": map[string]any{"task": "open " + target}}, parent),
			}
		}, false},
		{"a run, in its sub-agent's fetched page", func(t *testing.T) map[string]*historyBuilder {
			sub := testRunID + ":sub:1"
			return map[string]*historyBuilder{
				testRunID: (&historyBuilder{t: t}).started(runInput("research the launch"), "lane").child(sub),
				sub: (&historyBuilder{t: t}).started(map[string]any{"run": runInput("research"), "parent": testRunID}, testRunID).
					tool("tool-1", fetchIn(srv.URL+"/page"), link(target)),
			}
		}, true},
		{"another request's run of the same lane", func(t *testing.T) map[string]*historyBuilder {
			return map[string]*historyBuilder{
				"lane": (&historyBuilder{t: t}).child("lane:run:0").child(testRunID),
				"lane:run:0": (&historyBuilder{t: t}).started(runInput("earlier"), "lane").
					tool("tool-1", fetchIn(srv.URL+"/page"), link(target)),
				testRunID: (&historyBuilder{t: t}).started(runInput("now"), "lane"),
			}
		}, false},
	}
	newActivities := func(front *fakeFrontend) *Activities {
		return &Activities{Tools: reg, History: &CachedHistory{Client: frontendClient{svc: front}}, Log: zerolog.Nop()}
	}
	// The guard of target, from the tool's own request for approval.
	first, err := executeTool(t, newActivities(&fakeFrontend{}), fetchIn(target))
	if err != nil || first.NeedsApproval == nil {
		t.Fatalf("first call: %+v, %v; want a request for approval", first, err)
	}
	guard = first.NeedsApproval.Guard
	if !strings.Contains(first.NeedsApproval.Details, target) {
		t.Errorf("the approval does not show the whole URL: %s", first.NeedsApproval.Details)
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			front := &fakeFrontend{histories: map[string][]*historypb.HistoryEvent{}}
			for id, b := range tt.histories(t) {
				front.histories[id] = b.events
			}
			before := hits.Load()
			out, err := executeTool(t, newActivities(front), fetchIn(target))
			if err != nil {
				t.Fatal(err)
			}
			requests := hits.Load() - before
			switch {
			case tt.seen && (out.NeedsApproval != nil || out.Content != "URL: "+target+"\n\nstored" || requests != 1):
				t.Errorf("seen link: %d request(s), result %+v; want it fetched without approval", requests, out)
			case !tt.seen && (out.NeedsApproval == nil || requests != 0):
				t.Errorf("unseen link: %d request(s), result %+v; want a request for approval and nothing fetched", requests, out)
			}
		})
	}

	t.Run("the approved call", func(t *testing.T) {
		in := fetchIn(target)
		in.Approved, in.Guard = true, guard
		before := hits.Load()
		out, err := executeTool(t, newActivities(&fakeFrontend{}), in)
		if err != nil || out.NeedsApproval != nil || hits.Load() != before+1 {
			t.Fatalf("%+v, %v, %d request(s); want it fetched", out, err, hits.Load()-before)
		}
	})
	t.Run("history unavailable", func(t *testing.T) {
		_, err := executeTool(t, newActivities(&fakeFrontend{down: true}), fetchIn(target))
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != ErrHistoryUnavailable || appErr.NonRetryable() {
			t.Fatalf("err %v, want a retryable %s", err, ErrHistoryUnavailable)
		}
	})
	t.Run("a link without data reads no history", func(t *testing.T) {
		out, err := executeTool(t, newActivities(&fakeFrontend{down: true}), fetchIn(srv.URL+"/page?q=launch+date"))
		if err != nil || out.NeedsApproval != nil || out.IsError {
			t.Fatalf("%+v, %v", out, err)
		}
	})
}
