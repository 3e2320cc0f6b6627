package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/lucy-agent/lucy/internal/fakellm"
)

// Reset from the Web UI (the server's ResetWorkflowExecution) to several workflow tasks of a finished
// multi-tool run that made a CSV: each reset re-runs what follows, and the thread still has exactly
// one answer and one shared file, and the workspace file is written once.
func TestResetDoesNotDoublePost(t *testing.T) {
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			return fakellm.Reply{Content: "Here is the CSV of the signups, and it is afternoon in Paris."}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{
			fakellm.Call("c1", "lucy_generate_csv", `{"filename":"signups.csv","rows":[["week","signups"],["1","40"],["2","55"]]}`),
			fakellm.Call("c2", "lucy_current_time", `{"timezone":"Europe/Paris"}`),
		}}
	})
	root := s.say("<@ULUCY> make a CSV of the signups and tell me the time in Paris", "")
	s.event("app_mention", "Ev-reset", "<@ULUCY> make a CSV of the signups and tell me the time in Paris", root, "", human)
	s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(root, "Here is the CSV") })
	run := s.currentOrLastRun(t, root)
	s.waitFor("the run to complete", 30*time.Second, func() bool { return s.runStatus(t, run) == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED })
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	d, err := s.client.DescribeWorkflowExecution(dctx, run, "")
	dcancel()
	if err != nil {
		t.Fatal(err)
	}
	firstRun := d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	check := func(when string) {
		t.Helper()
		answers, files := 0, 0
		for _, m := range s.botMessages(root) {
			if strings.Contains(m.Text, "Here is the CSV") {
				answers++
			}
			if strings.Contains(m.Text, "Thinking") {
				t.Errorf("%s: a placeholder is left: %q", when, m.Text)
			}
			files += len(m.Files)
		}
		if answers != 1 || files != 1 {
			t.Errorf("%s: %d answers and %d shared files in the thread, want 1 and 1", when, answers, files)
		}
	}
	check("before any reset")

	// Every workflow task of the first run is a point an operator may reset to.
	var points []int64
	for _, ev := range s.history(t, run) {
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
			points = append(points, ev.GetEventId())
		}
	}
	if len(points) < 3 {
		t.Fatalf("only %d workflow tasks", len(points))
	}
	for i, p := range []int64{points[0], points[len(points)/2], points[len(points)-1]} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := s.client.ResetWorkflowExecution(ctx, &workflowservice.ResetWorkflowExecutionRequest{
			Namespace:                 s.cfg.TemporalNamespace,
			WorkflowExecution:         &commonpb.WorkflowExecution{WorkflowId: run, RunId: firstRun},
			Reason:                    fmt.Sprintf("test reset %d", i),
			WorkflowTaskFinishEventId: p,
			RequestId:                 fmt.Sprintf("reset-%d", i),
		})
		cancel()
		if err != nil {
			t.Fatalf("reset to event %d: %v", p, err)
		}
		s.waitFor(fmt.Sprintf("reset %d to complete", i), 60*time.Second, func() bool {
			return s.runStatusOf(t, run, resp.GetRunId()) == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		})
		check(fmt.Sprintf("after reset to event %d", p))
	}
}

func (s *stack) runStatus(t *testing.T, id string) enumspb.WorkflowExecutionStatus {
	return s.runStatusOf(t, id, "")
}

func (s *stack) runStatusOf(t *testing.T, id, runID string) enumspb.WorkflowExecutionStatus {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := s.client.DescribeWorkflowExecution(ctx, id, runID)
	if err != nil {
		return enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED
	}
	return d.GetWorkflowExecutionInfo().GetStatus()
}

// A first attempt of a run that was never reset posts without reading the thread first: the lookup
// for an earlier attempt's post costs a conversations.replies call (Slack's Tier 3 limit) and is
// made only when a post may exist (TestResetDoesNotDoublePost covers that side).
func TestFirstAttemptsPostWithoutLookingUp(t *testing.T) {
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: "The plan has three phases."}
	})
	root := s.say("<@ULUCY> summarize the launch plan", "")
	s.event("app_mention", "Ev-nolookup", "<@ULUCY> summarize the launch plan", root, "", human)
	s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(root, "three phases") })
	s.waitFor("the run to finish", 30*time.Second, func() bool {
		st, err := s.laneStatus(root)
		return err == nil && st.Runs == 1 && !st.Busy
	})
	// One read: the run loads the thread to answer in context. Before, every post looked up first.
	if n := s.slack.Calls("conversations.replies"); n != 1 {
		t.Errorf("conversations.replies called %d times for one simple answer, want 1 (the thread's load)", n)
	}
}
