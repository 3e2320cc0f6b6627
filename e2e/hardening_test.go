package e2e

import (
	"context"
	"fmt"
	"go.temporal.io/sdk/converter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/proto"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/workflows"
)

// End-to-end proofs for issue 7, on a real Temporal server with the real worker and gateway.

// A lane that closes (after 7 idle days; here an operator terminates it) and starts again with the
// next message must answer in full. Run IDs used to restart at run:1, so the new run found the old
// run's answer parts by their metadata and skipped its own: a truncated answer.
func TestLaneThatStartsAgainAnswersInFull(t *testing.T) {
	long := func(tag string) string {
		var b strings.Builder
		for i := 0; i < 3; i++ {
			fmt.Fprintf(&b, "%s part %d. %s\n\n", tag, i, strings.Repeat(tag+" words of the answer. ", 140))
		}
		return b.String()
	}
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if strings.Contains(lastUserText(req), "second") {
			return fakellm.Reply{Content: long("Beta")}
		}
		return fakellm.Reply{Content: long("Alpha")}
	})
	root := s.say("<@ULUCY> first question", "")
	s.event("app_mention", "Ev-first", "<@ULUCY> first question", root, "", human)
	s.waitFor("the first answer", 60*time.Second, func() bool { return s.answered(root, "Alpha part 2") })

	key := workflows.LaneKey{Team: team, Channel: channel, ThreadTS: root}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.client.TerminateWorkflow(ctx, workflows.LaneID(key), "", "test: the lane closed"); err != nil {
		t.Fatal(err)
	}
	ts := s.say("<@ULUCY> second question", root)
	s.event("app_mention", "Ev-second", "<@ULUCY> second question", ts, root, human)
	s.waitFor("the second run to finish", 60*time.Second, func() bool {
		st, err := s.laneStatus(root)
		return err == nil && st.Runs == 1 && !st.Busy
	})
	for _, tag := range []string{"Alpha", "Beta"} {
		for i := 0; i < 3; i++ {
			want := fmt.Sprintf("%s part %d", tag, i)
			n := 0
			for _, m := range s.botMessages(root) {
				if strings.Contains(m.Text, want) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%q appears %d times in the thread, want once", want, n)
			}
		}
	}
}

// "cancel that" while a side-effecting tool is in flight: the run waits until the tool has stopped
// or finished, records its outcome, and only then says "Stopped." (naming the step if it happened).
func TestCancelWaitsForToolInFlight(t *testing.T) {
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if n == 1 {
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_generate_csv",
				`{"filename":"signups.csv","rows":[["week","signups"],["1","40"]]}`)}}
		}
		return fakellm.Reply{Content: "Here is the CSV."}
	})
	// Slack takes 4 seconds to complete the upload, longer than the tool takes to hear of the cancel.
	uploading := make(chan struct{}, 1)
	s.slackBefore(t, func(r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/files.completeUploadExternal") {
			select {
			case uploading <- struct{}{}:
			default:
			}
			time.Sleep(4 * time.Second)
		}
	})

	root := s.say("<@ULUCY> make a CSV of the signups", "")
	s.event("app_mention", "Ev-csv", "<@ULUCY> make a CSV of the signups", root, "", human)
	select {
	case <-uploading:
	case <-time.After(60 * time.Second):
		t.Fatal("the upload never started")
	}
	cts := s.say("<@ULUCY> cancel that", root)
	s.event("message", "Ev-cancel", "<@ULUCY> cancel that", cts, root, human)
	s.waitFor("Stopped", 60*time.Second, func() bool { return s.answered(root, "Stopped") })

	// In the run's history the tool's outcome comes before the update that says "Stopped.".
	runID := s.currentOrLastRun(t, root)
	toolClosed, stoppedScheduled := int64(0), int64(0)
	var toolScheduled int64
	completed := false
	for _, ev := range s.history(t, runID) {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			switch {
			case a.GetActivityType().GetName() == "ExecuteTool":
				toolScheduled = ev.GetEventId()
			case a.GetActivityId() == "cancelled":
				stoppedScheduled = ev.GetEventId()
			}
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && a.GetScheduledEventId() == toolScheduled {
			toolClosed, completed = ev.GetEventId(), true
		}
		if a := ev.GetActivityTaskCanceledEventAttributes(); a != nil && a.GetScheduledEventId() == toolScheduled {
			toolClosed = ev.GetEventId()
		}
	}
	if toolClosed == 0 || stoppedScheduled == 0 || toolClosed > stoppedScheduled {
		t.Fatalf("tool closed at event %d, Stopped scheduled at %d: Stopped must come after the tool's outcome", toolClosed, stoppedScheduled)
	}
	// Whether the tool heard of the cancel before Slack answered depends on heartbeat timing: if it
	// completed, "Stopped." must say that the step happened.
	if named := s.answered(root, "had finished before I could stop it: creating a CSV file"); named != completed {
		t.Errorf("tool completed: %v, Stopped names it: %v", completed, named)
	}
}

// An approval signal that did not come through the gateway (sent with the Temporal client, as
// anyone with access to the namespace or the Web UI could) is refused; the requester's click works.
func TestForgedApprovalSignalIsRefused(t *testing.T) {
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			return fakellm.Reply{Content: "Done: " + last.Text()}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("d1", "lucy_delete_file", `{"path":"notes.md"}`)}}
	})
	dir := filepath.Join(s.cfg.DataDir, "workspaces", team)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(dir, "notes.md")
	if err := os.WriteFile(notes, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := s.say("<@ULUCY> delete notes.md", "")
	s.event("app_mention", "Ev-del", "<@ULUCY> delete notes.md", root, "", human)
	var value string
	s.waitFor("the approval prompt", 60*time.Second, func() bool { value = s.approvalValue(root); return value != "" })
	fp := value[strings.Index(value, `"fp":"`)+6:]
	fp = fp[:strings.Index(fp, `"`)]

	key := workflows.LaneKey{Team: team, Channel: channel, ThreadTS: root}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	forged := workflows.Approval{Fingerprint: fp, Approved: true, User: human, Channel: channel, Source: "button", EventID: "forged-1"}
	if err := s.client.SignalWorkflow(ctx, workflows.LaneID(key), "", workflows.SignalApproval, forged); err != nil {
		t.Fatal(err)
	}
	forged.Sig, forged.EventID = "v1:0000", "forged-2"
	if err := s.client.SignalWorkflow(ctx, workflows.LaneID(key), "", workflows.SignalApproval, forged); err != nil {
		t.Fatal(err)
	}
	// Both were checked and refused (the run's history shows two CheckApproval activities); the
	// file is still there.
	runID := s.currentOrLastRun(t, root)
	s.waitFor("both forged approvals to be checked", 30*time.Second, func() bool { return s.countActivities(t, runID, "CheckApproval") >= 2 })
	if _, err := os.Stat(notes); err != nil {
		t.Fatalf("a forged approval deleted the file: %v", err)
	}
	if len(s.slack.Ephemerals(channel)) != 0 {
		t.Errorf("someone was told about a forged approval: %+v", s.slack.Ephemerals(channel))
	}
	s.click(human, value, "lucy_approve")
	s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(root, "Done:") })
	if _, err := os.Stat(notes); !os.IsNotExist(err) {
		t.Fatalf("the requester's click did not delete the file: %v", err)
	}
}

// A thread of 40 messages of 40,000 characters, and a reply that writes two 1 MB files, stay under
// Temporal's 2 MiB payload limit: the run answers and no event in its history is over the limit.
func TestLongThreadAndBigToolArgumentsStayUnderThePayloadLimit(t *testing.T) {
	big := strings.Repeat("a \"quoted\" line of the report\n", 1<<20/32)
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if n == 1 {
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{
				fakellm.Call("w1", "lucy_write_file", fmt.Sprintf(`{"path":"a.md","content":%q}`, big)),
				fakellm.Call("w2", "lucy_write_file", fmt.Sprintf(`{"path":"b.md","content":%q}`, big)),
			}}
		}
		return fakellm.Reply{Content: "I read the thread and wrote what fitted."}
	})
	// Slack's limit on a message is 40,000 characters: each of these is exactly that long.
	fill := func(prefix string) string { return prefix + strings.Repeat("y", 40_000-len(prefix)) }
	root := s.say(fill("Here is the whole incident log, part 0. "), "")
	for i := 1; i < 40; i++ {
		s.say(fill(fmt.Sprintf("Part %d. ", i)), root)
	}
	ts := s.say("<@ULUCY> write the two reports", root)
	s.event("app_mention", "Ev-big", "<@ULUCY> write the two reports", ts, root, human)
	s.waitFor("the answer", 120*time.Second, func() bool { return s.answered(root, "I read the thread") })
	runID := s.currentOrLastRun(t, root)
	for _, ev := range s.history(t, runID) {
		if n := proto.Size(ev); n > 2<<20 {
			t.Errorf("event %d (%s) is %d bytes, over Temporal's 2 MiB payload limit", ev.GetEventId(), ev.GetEventType(), n)
		}
	}
}

// currentOrLastRun returns the run workflow ID of the lane's last run.
func (s *stack) currentOrLastRun(t *testing.T, root string) string {
	t.Helper()
	last := s.lastRunOrEmpty(root)
	if last == "" {
		t.Fatalf("lane %s started no run", workflows.LaneID(workflows.LaneKey{Team: team, Channel: channel, ThreadTS: root}))
	}
	return last
}

// slackBefore restarts the worker with its Slack calls going through before first, then to the
// local Slack: to hold or slow a call the test is about.
func (s *stack) slackBefore(t *testing.T, before func(r *http.Request)) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		before(r)
		s.slack.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.stopWorker()
	s.cfg.SlackAPIURL = srv.URL + "/api/"
	s.startWorker(s.log)
}

func (s *stack) history(t *testing.T, workflowID string) []*historypb.HistoryEvent {
	t.Helper()
	out, err := s.historyOrErr(workflowID)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// historyOrErr reads a workflow's history; a workflow the lane has named but whose start the server
// has not recorded yet is a *serviceerror.NotFound.
func (s *stack) historyOrErr(workflowID string) ([]*historypb.HistoryEvent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	it := s.client.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var out []*historypb.HistoryEvent
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

func (s *stack) countActivities(t *testing.T, workflowID, activityType string) int {
	n := 0
	dc := s.dc
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	for _, ev := range s.history(t, workflowID) {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activityType {
			n++
		}
		// A local activity (a quick tool, a reaction) is a marker that names its type.
		if m := ev.GetMarkerRecordedEventAttributes(); m != nil && m.GetMarkerName() == "LocalActivity" {
			var data struct{ ActivityType string }
			if dc.FromPayloads(m.GetDetails()["data"], &data) == nil && data.ActivityType == activityType {
				n++
			}
		}
	}
	return n
}
