package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/workflows"
)

// The model provider's faults as a person meets them in the thread.
func TestModelProviderFaults(t *testing.T) {
	t.Run("429 with Retry-After, then an answer", func(t *testing.T) {
		s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
			if n == 1 {
				return fakellm.Reply{Status: 429, RetryAfter: 1}
			}
			return fakellm.Reply{Content: "Answer after the rate limit."}
		})
		start := time.Now()
		root := s.say("<@ULUCY> summarize the launch plan", "")
		s.event("app_mention", "Ev-429", "<@ULUCY> summarize the launch plan", root, "", human)
		s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(root, "Answer after the rate limit.") })
		if d := time.Since(start); d < time.Second {
			t.Errorf("answered after %s: the Retry-After of 1 s was not honoured", d)
		}
	})
	t.Run("500s, then an answer", func(t *testing.T) {
		s := newStack(t, fakellm.WithoutNotes(func(n int, req fakellm.Request) fakellm.Reply {
			if n <= 2 {
				return fakellm.Reply{Status: 500}
			}
			return fakellm.Reply{Content: "Answer after two server errors."}
		}))
		root := s.say("<@ULUCY> summarize the launch plan", "")
		s.event("app_mention", "Ev-500", "<@ULUCY> summarize the launch plan", root, "", human)
		s.waitFor("the answer", 90*time.Second, func() bool { return s.answered(root, "Answer after two server errors.") })
		if n := len(s.llm.RunRequests()); n != 3 {
			t.Errorf("%d requests, want 3", n)
		}
	})
	t.Run("401: the thread hears the key was rejected", func(t *testing.T) {
		s := newStack(t, fakellm.WithoutNotes(func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Status: 401} }))
		root := s.say("<@ULUCY> summarize the launch plan", "")
		s.event("app_mention", "Ev-401", "<@ULUCY> summarize the launch plan", root, "", human)
		s.waitFor("the notice", 60*time.Second, func() bool { return s.answered(root, "rejected my request") })
		if s.answered(root, "couldn't reach") {
			t.Error("a rejected key was reported as an unreachable provider")
		}
		if n := len(s.llm.RunRequests()); n != 1 {
			t.Errorf("%d requests: a 401 is not retried", n)
		}
	})
	t.Run("malformed tool arguments", func(t *testing.T) {
		var sawError atomic.Bool
		s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
			if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
				sawError.Store(strings.Contains(last.Text(), "not valid JSON"))
				return fakellm.Reply{Content: "I sent broken arguments; here is the answer anyway."}
			}
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_read_file", `{"path": "notes.md"`)}}
		})
		root := s.say("<@ULUCY> read the notes", "")
		s.event("app_mention", "Ev-badargs", "<@ULUCY> read the notes", root, "", human)
		s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(root, "here is the answer anyway") })
		if !sawError.Load() {
			t.Error("the model was not told its arguments were not valid JSON")
		}
	})
}

// Slack's faults during a run: a rate limit and server errors are waited out and retried, so the
// person gets exactly one answer; an error that no retry fixes (the channel is gone) fails the run
// visibly instead of retrying forever.
func TestSlackFaults(t *testing.T) {
	answer := func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: "The plan has three phases."}
	}
	for _, tt := range []struct {
		name    string
		method  string
		failure localslack.Failure
	}{
		{"429 on the placeholder", "chat.postMessage", localslack.Failure{Status: 429, RetryAfter: 1}},
		{"5xx on the answer", "chat.update", localslack.Failure{Status: 503, Times: 2}},
		{"500 reading the thread", "conversations.replies", localslack.Failure{Status: 500}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newStack(t, answer)
			root := s.say("<@ULUCY> summarize the launch plan", "")
			s.slack.FailNext(tt.method, tt.failure)
			s.event("app_mention", "Ev-"+tt.method, "<@ULUCY> summarize the launch plan", root, "", human)
			s.waitFor("the answer", 90*time.Second, func() bool { return s.answered(root, "three phases") })
			n := 0
			for _, m := range s.botMessages(root) {
				if strings.Contains(m.Text, "three phases") {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d answers, want 1", n)
			}
		})
	}
	t.Run("channel_not_found is not retried forever", func(t *testing.T) {
		s := newStack(t, answer)
		root := s.say("<@ULUCY> summarize the launch plan", "")
		s.slack.FailNext("chat.postMessage", localslack.Failure{SlackError: "channel_not_found", Times: 100})
		s.event("app_mention", "Ev-gone", "<@ULUCY> summarize the launch plan", root, "", human)
		s.waitFor("the run to fail", 60*time.Second, func() bool {
			run := s.lastRunOrEmpty(root)
			return run != "" && s.runStatus(t, run) == enumspb.WORKFLOW_EXECUTION_STATUS_FAILED
		})
		if n := s.slack.Calls("chat.postMessage"); n > 10 {
			t.Errorf("chat.postMessage called %d times: a permanent error was retried", n)
		}
	})
}

// Slack refusals that an operator fixes (a revoked token, Lucy removed from the channel), met while
// the answer is delivered: the answer is kept, the run waits, and `resume` after the fix posts it once,
// without asking the model again.
func TestSlackRefusalWaitsForTheFix(t *testing.T) {
	for _, code := range []string{"invalid_auth", "not_in_channel"} {
		t.Run(code, func(t *testing.T) {
			hold := make(chan struct{})
			var calls atomic.Int32
			s := newStack(t, fakellm.WithoutNotes(func(n int, req fakellm.Request) fakellm.Reply {
				calls.Add(1)
				return fakellm.Reply{Content: "The plan has three phases.", Hold: hold}
			}))
			root := s.say("<@ULUCY> summarize the launch plan", "")
			s.event("app_mention", "Ev-"+code, "<@ULUCY> summarize the launch plan", root, "", human)
			s.waitFor("the model call", 30*time.Second, func() bool { return calls.Load() > 0 })
			// Now the token is revoked (or Lucy is removed from the channel): every write fails.
			for _, m := range []string{"chat.update", "chat.postMessage"} {
				s.slack.FailNext(m, localslack.Failure{SlackError: code, Times: 1000})
			}
			close(hold)
			run := s.lastRunOrEmpty(root)
			s.waitFor("the run to wait for the fix", 60*time.Second, func() bool { return s.runPhase(run) == "waiting_for_human" })
			if s.answered(root, "three phases") {
				t.Fatal("answered although Slack refused every write")
			}
			s.slack.ClearFailures() // the operator reinstalled the app (or invited Lucy back)
			if err := s.client.SignalWorkflow(context.Background(), run, "", workflows.SignalResume,
				workflows.Resume{Action: workflows.ResumeRetry}); err != nil {
				t.Fatal(err)
			}
			s.waitFor("the kept answer", 60*time.Second, func() bool { return s.answered(root, "three phases") })
			s.waitFor("the run to complete", 30*time.Second, func() bool {
				return s.runStatus(t, run) == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
			})
			n := 0
			for _, m := range s.botMessages(root) {
				n += strings.Count(m.Text, "three phases")
			}
			if n != 1 || calls.Load() != 1 {
				t.Errorf("%d answers and %d model calls, want 1 and 1", n, calls.Load())
			}
		})
	}
}

// A tool that keeps failing (a site answering 503 through every retry of two calls in a row) parks
// the run, the thread says so, and the requester's "retry" once the site is back finishes the work.
func TestAToolThatKeepsFailingParksUntilRetry(t *testing.T) {
	var up atomic.Bool
	var hits atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if !up.Load() {
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "<html><body><p>Status: all systems normal.</p></body></html>")
	}))
	defer site.Close()
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" && strings.Contains(last.Text(), "all systems normal") {
			return fakellm.Reply{Content: "The status page says all systems are normal."}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call(fmt.Sprint("c", n), "lucy_web_fetch", `{"url":"`+site.URL+`/status"}`)}}
	})
	root := s.say("<@ULUCY> what does our status page say?", "")
	s.event("app_mention", "Ev-site", "<@ULUCY> what does our status page say?", root, "", human)
	s.waitFor("the pause notice", 90*time.Second, func() bool { return s.answered(root, "keeps failing") })
	if !s.answered(root, "503") || !s.answered(root, "retry") {
		t.Errorf("the notice does not say why and how to resume: %+v", s.botMessages(root))
	}
	parkedHits := hits.Load()
	up.Store(true)
	rts := s.say("retry", root)
	s.event("message", "Ev-retry-site", "retry", rts, root, human)
	s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(root, "all systems are normal") })
	if n := hits.Load() - parkedHits; n != 1 {
		t.Errorf("the site was fetched %d times after retry, want 1", n)
	}
}

// runPhase is what the run's status query says it is doing ("" if it cannot be asked).
func (s *stack) runPhase(run string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := s.client.QueryWorkflow(ctx, run, "", workflows.QueryStatus)
	if err != nil {
		return ""
	}
	var st workflows.RunStatus
	if v.Get(&st) != nil {
		return ""
	}
	return st.Phase
}

// lastRunOrEmpty is the last run a lane started (runs are children of the lane, so the last one is
// in its history), "" while none.
func (s *stack) lastRunOrEmpty(root string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	key := workflows.LaneKey{Team: team, Channel: channel, ThreadTS: root}
	it := s.client.GetWorkflowHistory(ctx, workflows.LaneID(key), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	last := ""
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return ""
		}
		if a := ev.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil {
			last = a.GetWorkflowId()
		}
	}
	return last
}
