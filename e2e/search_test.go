package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/workflows"
)

// On the real server: a finished conversation's run is found by the Web UI's kind of query on its
// outcome, channel, workspace and requester, carries its intent and tier, and its description has
// the memo and the one-line summary; the lane is found by its channel.
func TestRunSearchAttributesMemoAndSummary(t *testing.T) {
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "**4**, of course."} })
	ts := s.say("<@ULUCY> what is 2+2?", "")
	if resp := s.event("app_mention", "EvSA1", "<@ULUCY> what is 2+2?", ts, "", human); resp.StatusCode != http.StatusOK {
		t.Fatalf("gateway answered %d", resp.StatusCode)
	}
	s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(ts, "*4*, of course.") })

	runID := workflows.RunID(workflows.LaneKey{Team: team, Channel: channel, ThreadTS: ts}, 1, ts)
	query := fmt.Sprintf("WorkflowType='agent_run' AND LucyOutcome='completed' AND LucyChannel='%s' AND LucyWorkspace='%s' AND LucyUser='%s' AND WorkflowId='%s'",
		channel, team, human, runID)
	run := s.findOne(query)
	dc := converter.GetDefaultDataConverter()
	attrs := map[string]string{}
	for k, p := range run.GetSearchAttributes().GetIndexedFields() {
		var v string
		if dc.FromPayload(p, &v) == nil {
			attrs[k] = v
		}
	}
	if attrs["LucyIntent"] == "" || attrs["LucyTier"] == "" {
		t.Errorf("the run's attributes lack intent or tier: %v", attrs)
	}
	t.Logf("run attributes: %v", attrs)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := s.client.DescribeWorkflowExecution(ctx, runID, "")
	if err != nil {
		t.Fatal(err)
	}
	// What the attributes cost: the change ID's marker and its TemporalChangeVersion upsert, and
	// the two upserts (routed, ended), in a run's history.
	upserts := 0
	iter := s.client.GetWorkflowHistory(ctx, runID, "", false, 0)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetUpsertWorkflowSearchAttributesEventAttributes() != nil {
			upserts++
		}
	}
	t.Logf("the run's history: %d events, %d of them search-attribute upserts", d.GetWorkflowExecutionInfo().GetHistoryLength(), upserts)
	var objective, summary string
	if p := d.GetWorkflowExecutionInfo().GetMemo().GetFields()["objective"]; p == nil || dc.FromPayload(p, &objective) != nil || objective != "what is 2+2?" {
		t.Errorf("memo objective %q (memo %v)", objective, d.GetWorkflowExecutionInfo().GetMemo())
	}
	if p := d.GetExecutionConfig().GetUserMetadata().GetSummary(); p == nil || dc.FromPayload(p, &summary) != nil || summary != "Ada Lovelace: what is 2+2?" {
		t.Errorf("summary %q", summary)
	}

	lane := s.findOne(fmt.Sprintf("WorkflowType='lane' AND LucyChannel='%s' AND LucyWorkspace='%s' AND WorkflowId='%s'",
		channel, team, workflows.LaneID(workflows.LaneKey{Team: team, Channel: channel, ThreadTS: ts})))
	ld, err := s.client.DescribeWorkflowExecution(ctx, lane.GetExecution().GetWorkflowId(), "")
	if err != nil {
		t.Fatal(err)
	}
	if p := ld.GetExecutionConfig().GetUserMetadata().GetSummary(); p == nil || dc.FromPayload(p, &summary) != nil || summary != "Thread: what is 2+2?" {
		t.Errorf("lane summary %q", summary)
	}
	// A filter on another outcome does not find it.
	if n := s.count(fmt.Sprintf("WorkflowType='agent_run' AND LucyOutcome='failed' AND LucyChannel='%s'", channel)); n != 0 {
		t.Errorf("%d failed runs, want 0", n)
	}
}

// findOne polls visibility (it trails the workflow by a moment) until query finds exactly one
// execution.
func (s *stack) findOne(query string) *workflowpb.WorkflowExecutionInfo {
	s.tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := s.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		cancel()
		if err != nil {
			s.tb.Fatalf("list %q: %v", query, err)
		}
		if len(resp.GetExecutions()) == 1 {
			return resp.GetExecutions()[0]
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("%q found %d executions, want 1", query, len(resp.GetExecutions()))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *stack) count(query string) int64 {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := s.client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
	if err != nil {
		s.tb.Fatalf("count %q: %v", query, err)
	}
	return resp.GetCount()
}
