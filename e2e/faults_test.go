package e2e

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/internal/fakellm"
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
		s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
			if n <= 2 {
				return fakellm.Reply{Status: 500}
			}
			return fakellm.Reply{Content: "Answer after two server errors."}
		})
		root := s.say("<@ULUCY> summarize the launch plan", "")
		s.event("app_mention", "Ev-500", "<@ULUCY> summarize the launch plan", root, "", human)
		s.waitFor("the answer", 90*time.Second, func() bool { return s.answered(root, "Answer after two server errors.") })
		if n := len(s.llm.Requests()); n != 3 {
			t.Errorf("%d requests, want 3", n)
		}
	})
	t.Run("401: the thread hears the key was rejected", func(t *testing.T) {
		s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Status: 401} })
		root := s.say("<@ULUCY> summarize the launch plan", "")
		s.event("app_mention", "Ev-401", "<@ULUCY> summarize the launch plan", root, "", human)
		s.waitFor("the notice", 60*time.Second, func() bool { return s.answered(root, "rejected my request") })
		if s.answered(root, "couldn't reach") {
			t.Error("a rejected key was reported as an unreachable provider")
		}
		if n := len(s.llm.Requests()); n != 1 {
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
