package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/audit"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/worker"
	"github.com/lucy-agent/lucy/workspace"
)

// Slack retries (same event_id, X-Slack-Retry-Num) and the double delivery of a mention as
// app_mention and message start exactly one run.
func TestDuplicateDeliveriesStartOneRun(t *testing.T) {
	s := newStack(t, fakellm.WithoutNotes(func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "Once."} }))
	text := "<@ULUCY> summarize the incident channel"
	ts := s.say(text, "")
	s.event("app_mention", "EvA", text, ts, "", human)
	s.event("app_mention", "EvA", text, ts, "", human) // retry
	s.event("message", "EvB", text, ts, "", human)     // double delivery
	s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(ts, "Once.") })
	s.waitFor("the lane to settle", 30*time.Second, func() bool {
		st, err := s.laneStatus(ts)
		return err == nil && !st.Busy
	})
	if n := len(s.llm.RunRequests()); n != 1 {
		t.Errorf("LLM called %d times, want 1", n)
	}
	if n := len(s.botMessages(ts)); n != 1 {
		t.Errorf("%d bot messages, want 1", n)
	}
}

// A long answer is split into ordered messages, the first replacing the placeholder.
func TestLongAnswerIsSplit(t *testing.T) {
	var b strings.Builder
	for i := 1; b.Len() < 15000; i++ { // a message's markdown block carries up to 12,000 characters
		fmt.Fprintf(&b, "Paragraph %d: %s\n\n", i, strings.Repeat("word ", 40))
	}
	long := b.String()
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: long} })
	ts := s.say("<@ULUCY> write me the long version", "")
	s.event("app_mention", "EvL", "<@ULUCY> write me the long version", ts, "", human)
	s.waitFor("the whole answer", 60*time.Second, func() bool {
		bots := s.botMessages(ts)
		// A streamed answer shows beside the placeholder until it is delivered.
		_, streaming := s.streamingMessage(ts)
		return len(bots) >= 2 && !streaming && strings.Contains(bots[0].Text, "Paragraph") && strings.Contains(bots[len(bots)-1].Text, "Paragraph")
	})
	bots := s.botMessages(ts)
	if len(bots) != 2 {
		t.Fatalf("%d messages, want 2", len(bots))
	}
	last := 0
	for i, m := range bots {
		if n := len([]rune(m.Text)); n > 12000 {
			t.Errorf("message %d has %d characters", i, n)
		}
		first := strings.Index(m.Text, "Paragraph ")
		var p int
		fmt.Sscanf(m.Text[first:], "Paragraph %d", &p)
		if p <= last {
			t.Errorf("message %d starts at paragraph %d, after %d: out of order", i, p, last)
		}
		last = p
	}
	if !strings.HasPrefix(bots[0].Text, "Paragraph 1:") {
		t.Errorf("first part %q", bots[0].Text[:40])
	}
}

// "cancel that" reaches an in-flight model call through heartbeats within seconds.
func TestCancelDuringModelCall(t *testing.T) {
	hold := make(chan struct{})
	cancelled := make(chan struct{})
	var once sync.Once
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		r := fakellm.Reply{Content: "never", Hold: hold}
		once.Do(func() { r.Cancelled = cancelled })
		return r
	})
	defer close(hold)
	ts := s.say("<@ULUCY> research our competitors in depth", "")
	s.event("app_mention", "EvR", "<@ULUCY> research our competitors in depth", ts, "", human)
	s.waitFor("the model call", 30*time.Second, func() bool { return len(s.llm.Requests()) > 0 })

	cts := s.cancelInFlight(t, ts, "EvCancel", "model call", cancelled, 30*time.Second)
	if !s.hasReaction(ts, cts, "octagonal_sign") {
		t.Error("the cancel message has no reaction")
	}
	for _, m := range s.botMessages(ts) {
		if strings.Contains(strings.ToLower(m.Text), "sorry") {
			t.Errorf("apology posted: %q", m.Text)
		}
	}
}

// "cancel that" while the supervisor's checkpoint waits for the model: the checkpoint is a local
// activity (its workflow task stays open, and the SDK heartbeats it), so the cancel is taken in at
// the task's next heartbeat, within 10 s, and the checkpoint's call is cancelled with the run.
func TestCancelDuringCheckpoint(t *testing.T) {
	hold := make(chan struct{})
	cancelled := make(chan struct{})
	defer close(hold)
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if fakellm.IsMemoryStep(req) {
			return fakellm.Reply{Content: "[]"}
		}
		turn, side := loopTurn(req)
		if side != nil {
			if side.Content == "C" { // the checkpoint after the third turn: held
				return fakellm.Reply{Content: "C", Hold: hold, Cancelled: cancelled}
			}
			return *side
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call(fmt.Sprint("c", turn), "lucy_list_files", `{}`)}}
	})
	ts := s.say("<@ULUCY> list the files again and again", "")
	s.event("app_mention", "EvCk", "<@ULUCY> list the files again and again", ts, "", human)
	s.waitFor("the checkpoint", 60*time.Second, func() bool {
		for _, r := range s.llm.Requests() {
			if len(r.Messages) > 0 && strings.Contains(r.Messages[0].Text(), "You supervise") {
				return true
			}
		}
		return false
	})
	s.cancelInFlight(t, ts, "EvCkStop", "checkpoint", cancelled, 20*time.Second)
}

// cancelInFlight says "cancel that" in the thread while a model call (what) is held, and waits until
// the call learns of it (cancelled closes, within limit) and the thread shows the stop; it prints
// both latencies and returns the cancel message's ts.
func (s *stack) cancelInFlight(t *testing.T, ts, eventID, what string, cancelled <-chan struct{}, limit time.Duration) string {
	t.Helper()
	cts := s.say("<@ULUCY> cancel that", ts)
	start := time.Now()
	s.event("message", eventID, "<@ULUCY> cancel that", cts, ts, human)
	select {
	case <-cancelled:
	case <-time.After(limit):
		t.Fatalf("the in-flight %s never learned of the cancel", what)
	}
	latency := time.Since(start)
	s.waitFor("the stop mark", 30*time.Second, func() bool { return s.answered(ts, "Stopped") })
	fmt.Printf("cancel latency (%s in flight): %s to the HTTP call, %s to the thread\n", what, latency.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return cts
}

// A long tool call learns of "cancel that" through its heartbeats too.
func TestCancelDuringToolCall(t *testing.T) {
	gone := make(chan time.Time, 1)
	started := make(chan struct{}, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done()
		gone <- time.Now()
	}))
	defer slow.Close()
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_web_fetch", fmt.Sprintf(`{"url":%q}`, slow.URL+"/slow"))}}
	})
	ts := s.say("<@ULUCY> read the slow page", "")
	s.event("app_mention", "EvS", "<@ULUCY> read the slow page", ts, "", human)
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatal("the tool never fetched the page")
	}
	cts := s.say("stop", ts)
	start := time.Now()
	s.event("message", "EvStop", "stop", cts, ts, human)
	select {
	case at := <-gone:
		fmt.Printf("cancel latency (tool call in flight): %s\n", at.Sub(start).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("the in-flight tool never learned of the cancel")
	}
	s.waitFor("the stop mark", 30*time.Second, func() bool { return s.answered(ts, "Stopped") })
}

// "what are you working on?" answers from the run's status, while running and when idle, and never
// starts a run.
func TestStatusWhileRunningAndIdle(t *testing.T) {
	hold := make(chan struct{})
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "All done.", Hold: hold} })
	ts := s.say("<@ULUCY> compile the quarterly numbers", "")
	s.event("app_mention", "EvQ", "<@ULUCY> compile the quarterly numbers", ts, "", human)
	s.waitFor("the model call", 30*time.Second, func() bool { return len(s.llm.Requests()) > 0 })
	q := s.say("<@ULUCY> what are you working on?", ts)
	s.event("message", "EvW", "<@ULUCY> what are you working on?", q, ts, human)
	s.waitFor("the status answer", 30*time.Second, func() bool { return s.answered(ts, "compile the quarterly numbers") })
	close(hold)
	s.waitFor("the answer", 30*time.Second, func() bool { return s.answered(ts, "All done.") })
	s.waitFor("the run to end", 30*time.Second, func() bool {
		st, err := s.laneStatus(ts)
		return err == nil && !st.Busy
	})
	q2 := s.say("<@ULUCY> what are you working on?", ts)
	s.event("message", "EvW2", "<@ULUCY> what are you working on?", q2, ts, human)
	s.waitFor("the idle status", 30*time.Second, func() bool { return s.answered(ts, "not working on anything") })
	st, err := s.laneStatus(ts)
	if err != nil || st.Runs != 1 {
		t.Errorf("runs = %d (%v): a status question started a run", st.Runs, err)
	}
}

// An approval wait survives a worker restart; another person's click is refused; the requester's
// click runs the destructive tool.
func TestApprovalSurvivesWorkerRestart(t *testing.T) {
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			return fakellm.Reply{Content: "Deleted: " + last.Text()}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("d1", "lucy_delete_file", `{"path":"old.csv"}`)}}
	})
	file := filepath.Join(s.cfg.DataDir, "workspaces", team, "old.csv")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("a,b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := s.say("<@ULUCY> delete old.csv", "")
	s.event("app_mention", "EvD", "<@ULUCY> delete old.csv", ts, "", human)
	var value string
	s.waitFor("the approval prompt", 60*time.Second, func() bool {
		value = s.approvalValue(ts)
		return value != ""
	})

	s.stopWorker()
	s.startWorker(s.log)

	s.click("UOTHER", value, "lucy_approve")
	s.waitFor("the refusal", 30*time.Second, func() bool { return len(s.slack.Ephemerals(channel)) > 0 })
	if _, err := os.Stat(file); err != nil {
		t.Fatal("the file was deleted on another person's click")
	}
	s.click(human, value, "lucy_approve")
	s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(ts, "Deleted") })
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("file still there after approval: %v", err)
	}
	if !s.answered(ts, "Approved by") {
		t.Error("the prompt does not show who approved")
	}
	// The record of what Lucy did (lucy_activity, lucy audit export) has the approval, who gave it,
	// and the deletion it allowed; not the refused click, which decided nothing.
	rec, err := audit.New(workspace.NewLocalAt(filepath.Join(s.cfg.DataDir, worker.StateDir)), nil).
		List(context.Background(), team, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var approved, deleted bool
	for _, e := range rec {
		switch {
		case e.Kind == audit.KindApproval && e.Outcome == "approved" && e.By == human && e.Tool == "lucy_delete_file" && e.ThreadTS == ts:
			approved = true
		case e.Kind == audit.KindFile && e.Tool == "lucy_delete_file" && e.Approved && e.User == human && strings.Contains(e.Summary, "old.csv"):
			deleted = true
		}
	}
	if !approved || !deleted || len(rec) != 2 {
		t.Errorf("record = %+v, want the approval by %s and the deletion", rec, human)
	}
}

func (s *stack) approvalValue(ts string) string {
	for _, m := range s.botMessages(ts) {
		if m.Blocks == nil || !strings.Contains(string(m.Blocks), "lucy_approve") {
			continue
		}
		var blocks []struct {
			Elements []struct {
				ActionID string `json:"action_id"`
				Value    string `json:"value"`
			} `json:"elements"`
		}
		if json.Unmarshal(m.Blocks, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			for _, e := range b.Elements {
				if e.ActionID == "lucy_approve" {
					return e.Value
				}
			}
		}
	}
	return ""
}

// click sends a signed block_actions payload, as Slack does when someone presses a button.
func (s *stack) click(user, value, action string) {
	s.tb.Helper()
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "team": map[string]string{"id": team}, "user": map[string]string{"id": user},
		"channel": map[string]string{"id": channel}, "trigger_id": fmt.Sprintf("trig-%s-%d", user, time.Now().UnixNano()),
		"response_url": "", "actions": []map[string]string{{"action_id": action, "value": value, "block_id": "lucy_approval", "type": "button"}},
	})
	body := []byte("payload=" + url.QueryEscape(string(payload)))
	if resp := s.post("/slack/interactivity", body, "application/x-www-form-urlencoded", secret); resp.StatusCode != http.StatusOK {
		s.tb.Fatalf("interactivity answered %d", resp.StatusCode)
	}
}

func (s *stack) hasReaction(threadTS, ts, name string) bool {
	for _, m := range s.slack.Messages(channel, threadTS) {
		if m.TS != ts {
			continue
		}
		for _, r := range m.Reactions {
			if r.Name == name {
				return true
			}
		}
	}
	return false
}
