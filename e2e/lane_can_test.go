package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/temporal"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/workflows"
)

// A lane continues-as-new when the server suggests it (here after 60 events instead of 4,096) and
// loses nothing: every message is answered, run numbers keep counting, and a Slack redelivery of a
// message seen before the continue-as-new is still a duplicate.
func TestLaneContinuesAsNewLosingNothing(t *testing.T) {
	dc := dynamicconfig.StaticClient{
		dynamicconfig.HistoryCountSuggestContinueAsNew.Key():        []dynamicconfig.ConstrainedValue{{Value: 60}},
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): []dynamicconfig.ConstrainedValue{{Value: true}},
	}
	s := newStackTB(t, fakellm.WithoutNotes(func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: fmt.Sprintf("Answer number %d, complete and checked.", n)}
	}), temporal.WithDynamicConfigClient(dc))

	root := s.say("<@ULUCY> let's go through the checklist, item 1", "")
	s.event("app_mention", "Ev-0", "<@ULUCY> let's go through the checklist, item 1", root, "", human)
	s.waitFor("answer 1", 60*time.Second, func() bool { return s.answered(root, "Answer number 1,") })
	const n = 12
	for i := 2; i <= n; i++ {
		text := fmt.Sprintf("<@ULUCY> now checklist item %d please", i)
		ts := s.say(text, root)
		s.event("message", fmt.Sprintf("Ev-%d", i), text, ts, root, human)
		want := fmt.Sprintf("Answer number %d,", i)
		s.waitFor(want, 60*time.Second, func() bool { return s.answered(root, want) })
		s.waitFor("the lane to be idle", 30*time.Second, func() bool {
			st, err := s.laneStatus(root)
			return err == nil && !st.Busy && st.Runs == i
		})
	}

	laneID := workflows.LaneID(workflows.LaneKey{Team: team, Channel: channel, ThreadTS: root})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := s.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: s.cfg.TemporalNamespace, Query: fmt.Sprintf("WorkflowId = %q", laneID),
	})
	if err != nil {
		t.Fatal(err)
	}
	continued := 0
	for _, e := range resp.Executions {
		if e.Status == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
			continued++
		}
	}
	if continued == 0 {
		t.Fatalf("the lane never continued as new (%d executions)", len(resp.Executions))
	}
	t.Logf("lane continued as new %d times over %d messages", continued, n)

	// Slack redelivers the very first mention: still a duplicate after continue-as-new. A fresh
	// message after it proves the lane processed the redelivery (signals are handled in order).
	s.event("app_mention", "Ev-0", "<@ULUCY> let's go through the checklist, item 1", root, "", human)
	last := s.say("<@ULUCY> and the last item", root)
	s.event("message", "Ev-last", "<@ULUCY> and the last item", last, root, human)
	s.waitFor("the last answer", 60*time.Second, func() bool { return s.answered(root, fmt.Sprintf("Answer number %d,", n+1)) })
	s.waitFor("the lane to be idle", 30*time.Second, func() bool {
		st, err := s.laneStatus(root)
		return err == nil && !st.Busy
	})
	if st, _ := s.laneStatus(root); st.Runs != n+1 {
		t.Errorf("runs = %d, want %d: the redelivered mention ran again", st.Runs, n+1)
	}
	if got := len(s.llm.RunRequests()); got != n+1 {
		t.Errorf("LLM calls %d, want %d", got, n+1)
	}
}
