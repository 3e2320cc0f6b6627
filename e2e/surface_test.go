package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/workflows"
)

// threeStepLLM reads #general, lists the files, asks the time, then answers.
func threeStepLLM(n int, req fakellm.Request) fakellm.Reply {
	turn, side := loopTurn(req)
	if side != nil {
		return *side
	}
	switch turn {
	case 0:
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_get_channel_history", `{"channel": "#general"}`)}}
	case 1:
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c2", "lucy_list_files", `{}`)}}
	case 2:
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c3", "lucy_current_time", `{"timezone": "Europe/Paris"}`)}}
	}
	return fakellm.Reply{Content: "## Summary\n\n| Step | Done |\n|---|---|\n| 3 | yes |\n\nAll three steps are done."}
}

// statuses are the status lines set on a thread, in order.
func statuses(s *stack, threadTS string) []string {
	var out []string
	for _, c := range s.slack.StatusHistory(channel, threadTS) {
		out = append(out, c.Status)
	}
	return out
}

// inOrder reports whether want appears in got in that order (other entries may come between).
func inOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// A three-step run shows its steps in the thread's status line (quick tools aside) and clears it with the answer, which
// is a markdown block ending with the feedback buttons; a 👎 clicked twice is recorded once, on the
// lane's LucyFeedback attribute and memo. Where setStatus answers not_allowed, the run asks once and
// edits its placeholder instead (turn 3).
func TestStatusStepsAndFeedback(t *testing.T) {
	s := newStack(t, threeStepLLM)
	text := "<@ULUCY> check #general, the files and the time"
	ts := s.say(text, "")
	s.event("app_mention", "Ev-surface-1", text, ts, "", human)
	s.waitFor("the answer", 90*time.Second, func() bool { return s.answered(ts, "All three steps are done.") })
	s.waitFor("the status to clear", 30*time.Second, func() bool {
		h := statuses(s, ts)
		return len(h) > 0 && h[len(h)-1] == ""
	})
	got := statuses(s, ts)
	// The file list and the clock are quick tools, over within the workflow task that got the reply
	// (a lean turn): they set no status line of their own, the line stays on what the run is doing.
	want := []string{"is thinking", "is reading #general history", ""}
	if !inOrder(got, want) {
		t.Fatalf("status history %q, want %q in order", got, want)
	}
	if s.slack.Status(channel, ts) != "" {
		t.Errorf("status still shown: %q", s.slack.Status(channel, ts))
	}
	bots := s.botMessages(ts)
	answer := bots[len(bots)-1]
	if answer.Edited == "" { // the status line works: the placeholder was edited once, by the answer
		t.Errorf("the placeholder did not become the answer: %+v", answer)
	}
	var all, blocks []map[string]any
	if err := json.Unmarshal(answer.Blocks, &all); err != nil {
		t.Fatal(err)
	}
	for _, b := range all { // the steps' task cards lead the answer (changeStreamLife)
		if b["type"] != "task_card" {
			blocks = append(blocks, b)
		}
	}
	if cards := answer.Cards(); len(cards) != 3 {
		t.Errorf("the answer shows %d steps, want 3: %+v", len(cards), cards)
	}
	if len(blocks) != 2 || blocks[0]["type"] != "markdown" ||
		!strings.Contains(fmt.Sprint(blocks[0]["text"]), "| Step | Done |") || blocks[1]["type"] != "context_actions" {
		t.Fatalf("answer blocks %s", answer.Blocks)
	}

	// 👎 twice (a double click, or Slack redelivering): one vote.
	lane := workflows.LaneID(workflows.LaneKey{Team: team, Channel: channel, ThreadTS: ts})
	vote := func(user string, positive bool) { // a click on Slack's feedback_buttons, as Slack sends it
		t.Helper()
		p, err := s.slack.ClickFeedback(user, channel, answer.TS, positive)
		if err != nil {
			t.Fatal(err)
		}
		s.interact(p)
	}
	vote("UOTHER", false)
	vote("UOTHER", false)
	vote(human, true)
	s.waitFor("the votes on the lane", 30*time.Second, func() bool { return len(laneFeedback(t, s, lane)) == 2 })
	s.waitFor("LucyFeedback", 30*time.Second, func() bool {
		return s.count(fmt.Sprintf("LucyFeedback='down' AND WorkflowId='%s'", lane)) == 1
	})
	recs := laneFeedback(t, s, lane)
	if recs[0].User != "UOTHER" || recs[0].Value != workflows.FeedbackDown || recs[1].User != human || recs[1].Value != workflows.FeedbackUp ||
		!strings.HasPrefix(recs[0].Run, lane+":run:") {
		t.Errorf("memo %+v", recs)
	}
	// The second 👎 was signalled before the 👍, so the lane had handled it when the 👍 was recorded.
	if n := len(laneFeedback(t, s, lane)); n != 2 {
		t.Errorf("%d votes recorded, want 2", n)
	}
	if *record { // go test ./e2e/ -run TestStatusStepsAndFeedback -record
		s.saveHistory(t, lane, "surface-lane.json")
		s.saveHistory(t, recs[0].Run, "surface-run.json")
	}

	// Fallback: a workspace without the status API (an app installed without the scope).
	s.slack.FailNext("assistant.threads.setStatus", localslack.Failure{SlackError: "missing_scope"})
	before := s.slack.Calls("assistant.threads.setStatus")
	text2 := "<@ULUCY> again: #general, the files and the time"
	ts2 := s.say(text2, "")
	s.event("app_mention", "Ev-surface-2", text2, ts2, "", human)
	s.waitFor("the second answer", 90*time.Second, func() bool { return s.answered(ts2, "All three steps are done.") })
	if n := s.slack.Calls("assistant.threads.setStatus") - before; n != 1 {
		t.Errorf("setStatus called %d times after missing_scope, want once", n)
	}
	if h := statuses(s, ts2); len(h) != 0 {
		t.Errorf("statuses recorded although refused: %q", h)
	}
	if n := s.countActivities(t, workflows.RunID(workflows.LaneKey{Team: team, Channel: channel, ThreadTS: ts2}, 1, ts2), "UpdateMessage"); n != 1 {
		t.Errorf("%d placeholder progress edits, want 1 (turn 3)", n)
	}
}

// laneFeedback is the lane memo's feedback records.
func laneFeedback(t *testing.T, s *stack, lane string) []workflows.FeedbackRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := s.client.DescribeWorkflowExecution(ctx, lane, "")
	if err != nil {
		t.Fatal(err)
	}
	p := d.GetWorkflowExecutionInfo().GetMemo().GetFields()[workflows.MemoFeedback]
	if p == nil {
		return nil
	}
	var recs []workflows.FeedbackRecord
	dc := s.dc
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	if err := dc.FromPayload(p, &recs); err != nil {
		t.Fatal(err)
	}
	return recs
}

// A new assistant thread suggests the kinds of request the team made lately: after two research
// requests, "Research a question" comes first among the prompts (there are no team skills or
// recurring jobs here), read from the runs' LucyIntent in Temporal's visibility.
func TestSuggestedPromptsFromRecentRuns(t *testing.T) {
	s := newStack(t, fakellm.WithoutNotes(func(int, fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: "Acme is cheaper than Globex."}
	}))
	for i, text := range []string{"<@ULUCY> compare Acme and Globex pricing", "<@ULUCY> research the competitors' pricing"} {
		root := s.say(text, "")
		s.event("app_mention", fmt.Sprint("Ev-kinds-", i), text, root, "", human)
		s.waitFor("the answer", time.Minute, func() bool { return s.answered(root, "cheaper than Globex") })
	}
	s.waitFor("both runs in visibility as research", 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := s.client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowType = '%s' AND LucyWorkspace = '%s' AND LucyIntent = 'research'", workflows.AgentRunWorkflowName, team)})
		return err == nil && resp.GetCount() == 2
	})
	_, root, err := s.user.PostMessage("DLOCAL", slack.MsgOptionText("hi", false))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{
		"token": "x", "team_id": team, "api_app_id": "ALUCY", "type": "event_callback", "event_id": "Ev-assistant-1",
		"event_time": time.Now().Unix(), "event": map[string]any{"type": "assistant_thread_started", "event_ts": root,
			"assistant_thread": map[string]any{"user_id": human, "channel_id": "DLOCAL", "thread_ts": root,
				"context": map[string]any{"channel_id": channel, "team_id": team}}},
	})
	s.post("/slack/events", body, "application/json", secret)
	var prompts []localslack.SuggestedPrompt
	s.waitFor("the suggested prompts", time.Minute, func() bool {
		_, prompts = s.slack.SuggestedPrompts("DLOCAL", root)
		return len(prompts) > 0
	})
	if prompts[0].Title != "Research a question" {
		t.Errorf("suggested prompts %+v, want the team's research requests first", prompts)
	}
	for _, p := range prompts[1:] {
		if p.Title == "Research a question" {
			t.Errorf("research suggested twice: %+v", prompts)
		}
	}
}
