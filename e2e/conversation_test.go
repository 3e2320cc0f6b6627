package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/workflows"
)

// A signed Events API request goes in; the LLM sees the message; the answer is posted once, in the
// right thread, by turning the placeholder into the answer.
func TestFirstConversation(t *testing.T) {
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: "**4**, of course."}
	})
	ts := s.say("<@ULUCY> what is 2+2?", "")
	if resp := s.event("app_mention", "Ev1", "<@ULUCY> what is 2+2?", ts, "", human); resp.StatusCode != http.StatusOK {
		t.Fatalf("gateway answered %d", resp.StatusCode)
	}
	s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(ts, "*4*, of course.") })

	reqs := s.llm.Requests()
	if len(reqs) == 0 || !strings.Contains(lastUserText(reqs[0]), "what is 2+2?") {
		t.Fatalf("the LLM did not see the message: %+v", reqs)
	}
	if reqs[0].Messages[0].Role != "system" || !strings.Contains(reqs[0].Messages[0].Text(), "Lucy") {
		t.Errorf("no system prompt: %+v", reqs[0].Messages[0])
	}
	if bots := s.botMessages(ts); len(bots) != 1 {
		t.Errorf("Lucy posted %d messages in the thread, want exactly 1 (placeholder updated into the answer)", len(bots))
	}
}

// A forged signature is rejected and starts nothing.
func TestForgedSignatureStartsNothing(t *testing.T) {
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "no"} })
	ts := s.say("<@ULUCY> hi", "")
	body := []byte(`{"type":"event_callback","team_id":"T1","event_id":"EvForged","event":{"type":"app_mention","user":"ULOCAL","text":"<@ULUCY> hi","ts":"` + ts + `","channel":"CLOCAL"}}`)
	if resp := s.post("/slack/events", body, "application/json", "wrong-secret"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("forged request answered %d, want 401", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.client.DescribeWorkflowExecution(ctx, workflows.LaneID(workflows.LaneKey{Team: team, Channel: channel, ThreadTS: ts}), "")
	if err == nil {
		t.Fatal("a lane was started by a forged request")
	}
	if n := len(s.llm.Requests()); n != 0 {
		t.Errorf("the LLM was called %d times", n)
	}
}
