package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/subagents"
	"github.com/lucy-agent/lucy/workflows"
)

// isSubAgent tells a sub-agent's model request from the main run's by its system prompt (SOUL_LITE.md).
func isSubAgent(req fakellm.Request) bool {
	return len(req.Messages) > 0 && req.Messages[0].Role == "system" && strings.Contains(req.Messages[0].Text(), "specialist sub-agents")
}

func turnsOf(req fakellm.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// A delegation against a real server: the sub-agent is a child workflow under its run, shows its
// progress in the thread, its tokens roll up into the run, and the person gets the answer.
func TestDelegationEndToEnd(t *testing.T) {
	release := make(chan struct{})
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if isSubAgent(req) {
			switch turns := turnsOf(req); {
			case turns < 3:
				return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("s"+string(rune('a'+turns)), "lucy_current_time", `{"timezone":"Europe/Paris"}`)},
					PromptTokens: 100, CompletionTokens: 10}
			case turns == 3: // held: the thread shows the progress of step 3 meanwhile
				return fakellm.Reply{Hold: release, Content: `{"summary":"It is daytime in Paris.","actions_taken":["checked the time 3 times"],` +
					`"evidence":[{"claim":"local time","source":"lucy_current_time"}],"open_questions":[],"confidence":"high"}`,
					PromptTokens: 100, CompletionTokens: 10}
			}
		}
		for _, m := range req.Messages {
			if m.Role == "tool" && strings.Contains(m.Text(), `"summary": "It is daytime in Paris."`) {
				return fakellm.Reply{Content: "The research agent says it is daytime in Paris."}
			}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("p1", "delegate_to_research_agent", `{"task":"Find out whether it is daytime in Paris"}`)}}
	})
	root := s.say("<@ULUCY> is it daytime in Paris? ask your research agent", "")
	s.event("app_mention", "Ev-sub", "<@ULUCY> is it daytime in Paris? ask your research agent", root, "", human)
	s.waitFor("the sub-agent's progress in the thread", 60*time.Second, func() bool { return s.answered(root, "research agent, step 3") })
	close(release)
	s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(root, "The research agent says") })

	run := s.currentOrLastRun(t, root)
	child := subagents.ID(run, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := s.client.DescribeWorkflowExecution(ctx, child, "")
	if err != nil {
		t.Fatalf("sub-agent workflow %s: %v", child, err)
	}
	info := d.GetWorkflowExecutionInfo()
	if info.GetType().GetName() != subagents.WorkflowName || info.GetParentExecution().GetWorkflowId() != run ||
		info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Errorf("sub-agent %s: type %s, parent %s, status %s", child, info.GetType().GetName(), info.GetParentExecution().GetWorkflowId(), info.GetStatus())
	}
	var res workflows.RunResult
	if err := s.client.GetWorkflow(ctx, run, "").Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	// Every model call, the run's and the sub-agent's, is in the run's usage.
	perModel := map[string]int{}
	for _, r := range s.llm.Requests() {
		perModel[r.Model]++
	}
	for model, n := range perModel {
		if u := res.Usage[model]; u.Calls != n {
			t.Errorf("run usage of %s: %d calls, want %d (the sub-agent's must roll up): %+v", model, u.Calls, n, res.Usage)
		}
	}
	// The tools ran in the child, not in the run.
	if n := s.countActivities(t, child, "ExecuteTool"); n != 3 {
		t.Errorf("sub-agent ran %d tools, want 3", n)
	}
	if n := s.countActivities(t, run, "ExecuteTool"); n != 0 {
		t.Errorf("the run itself ran %d tools", n)
	}
}

// "cancel that" while a sub-agent waits on the model: the child is cancelled within seconds, its
// in-flight model request is abandoned, and the thread says "Stopped.".
func TestCancellingTheRunStopsTheSubAgentWithinSeconds(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	abandoned := make(chan struct{})
	var once sync.Once
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if isSubAgent(req) {
			c := make(chan struct{})
			go func() { <-c; once.Do(func() { close(abandoned) }) }()
			return fakellm.Reply{Hold: hold, Cancelled: c, Content: "never"}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("p1", "delegate_to_code_agent", `{"task":"compute something slowly"}`)}}
	})
	root := s.say("<@ULUCY> compute something slowly", "")
	s.event("app_mention", "Ev-subc", "<@ULUCY> compute something slowly", root, "", human)
	var child string
	s.waitFor("the sub-agent to start", 60*time.Second, func() bool {
		for _, r := range s.llm.Requests() {
			if isSubAgent(r) {
				child = subagents.ID(s.currentOrLastRun(t, root), 1)
				return true
			}
		}
		return false
	})
	start := time.Now()
	cts := s.say("<@ULUCY> cancel that", root)
	s.event("message", "Ev-subcancel", "<@ULUCY> cancel that", cts, root, human)
	s.waitFor("Stopped", 60*time.Second, func() bool { return s.answered(root, "Stopped") })
	select {
	case <-abandoned:
	case <-time.After(30 * time.Second):
		t.Fatal("the sub-agent's model request was not abandoned")
	}
	took := time.Since(start)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := s.client.DescribeWorkflowExecution(ctx, child, "")
	if err != nil {
		t.Fatal(err)
	}
	if st := d.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
		t.Errorf("sub-agent status %s, want cancelled", st)
	}
	t.Logf("cancel to stopped sub-agent: %s", took.Round(time.Millisecond))
}

// A sub-agent whose model rejects it: the run's model is told, and the person still gets an answer.
func TestFailingSubAgentIsReportedToTheRun(t *testing.T) {
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if isSubAgent(req) {
			return fakellm.Reply{Status: 401}
		}
		for _, m := range req.Messages {
			if m.Role == "tool" && strings.Contains(m.Text(), `"status": "failed"`) {
				return fakellm.Reply{Content: "My document agent could not run, so here is the outline instead."}
			}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("p1", "delegate_to_document_agent", `{"task":"make a PDF"}`)}}
	})
	root := s.say("<@ULUCY> make me a PDF report", "")
	s.event("app_mention", "Ev-subf", "<@ULUCY> make me a PDF report", root, "", human)
	s.waitFor("the answer", 90*time.Second, func() bool { return s.answered(root, "outline instead") })
	for _, m := range s.botMessages(root) {
		if strings.Contains(m.Text, "resume") {
			t.Errorf("a failing sub-agent parked the run: %q", m.Text)
		}
	}
}
