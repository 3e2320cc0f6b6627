package activities

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/activities/slackstream"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/output"
)

// The timeline: opened with its first task, updated in place by task id, the answer appended to it
// by CallModel (no stream of its own), stopped, and turned into the answer by delivery with its
// tasks: one message of Lucy's.
func TestTimelineThenAnswer(t *testing.T) {
	answer := paragraphs(1500)
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: answer, ChunkChars: 50}
	})
	root, ph := f.thread(t)
	target := StreamTarget{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Recipient: "U1"}
	var open TimelineResult
	if err := f.run(t, f.a.StreamSteps, TimelineInput{Target: target, Tasks: []StepTask{{ID: "c1", Title: "reading #sales history", Status: "in_progress"}}}, &open); err != nil {
		t.Fatal(err)
	}
	if open.TS == "" || open.Unavailable {
		t.Fatalf("open: %+v", open)
	}
	for _, tasks := range [][]StepTask{
		{{ID: "c1", Title: "reading #sales history", Status: "complete"}},
		{{ID: "c2", Title: "reading a web page", Status: "in_progress"}},
		{{ID: "c2", Title: "reading a web page", Status: "error"}},
		{{ID: "c2", Title: "reading a web page", Status: "error"}}, // sent twice
	} {
		var res TimelineResult
		if err := f.run(t, f.a.StreamSteps, TimelineInput{Target: target, TS: open.TS, Tasks: tasks}, &res); err != nil || res.TS != open.TS {
			t.Fatalf("update: %+v %v", res, err)
		}
	}
	in := streamInput(root)
	in.Stream.TS = open.TS
	var reply ModelReply
	if err := f.run(t, f.a.CallModel, in, &reply); err != nil {
		t.Fatal(err)
	}
	if reply.StreamTS != open.TS || f.srv.Calls("chat.startStream") != 1 {
		t.Fatalf("the answer streamed into %q (%d streams started), want the timeline %s", reply.StreamTS, f.srv.Calls("chat.startStream"), open.TS)
	}
	m := f.botMessages(root)[1]
	if !m.Streaming || m.Text != slackstream.PreviewText(answer) {
		t.Fatalf("the timeline after the answer: streaming %v, text %.80q", m.Streaming, m.Text)
	}
	if err := f.run(t, f.a.StreamSteps, TimelineInput{Target: target, TS: open.TS, Stop: true}, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.run(t, f.a.StreamSteps, TimelineInput{Target: target, TS: open.TS, Stop: true}, nil); err != nil {
		t.Errorf("stopping twice (a retried delivery): %v", err)
	}
	// The run's steps as they ended (the workflow's DeliverInput.Steps): the chat.update that
	// delivers replaces the stopped stream's cards (localslack drops them, as Slack likely does), so
	// the answer carries them as task_card blocks.
	steps := []StepTask{{ID: "c1", Title: "reading #sales history", Status: "complete"}, {ID: "c2", Title: "reading a web page", Status: "error"}}
	if err := f.run(t, f.a.DeliverAnswer, DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph, Markdown: answer, StreamTS: open.TS, Steps: steps}, nil); err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	want := []localslack.Task{{ID: "c1", Title: "reading #sales history", Status: "complete"}, {ID: "c2", Title: "reading a web page", Status: "error"}}
	if len(bots) != 1 || bots[0].TS != open.TS || bots[0].Streaming || bots[0].Text != output.RenderMarkdown(answer, nil)[0].Text || !slices.Equal(cardBlocks(t, bots[0]), want) {
		t.Fatalf("the thread: %d messages of Lucy's; first %+v", len(bots), bots[0])
	}
	if len(bots[0].Tasks) != 0 {
		t.Errorf("the stream's own cards survived an update with blocks: %+v", bots[0].Tasks)
	}
	if strings.Count(bots[0].Text, "Sentence 3 of the answer") != 1 {
		t.Error("text shows twice")
	}
}

// A reply with tool calls leaves the timeline as it is: never deleted (delivery replaces the text).
func TestTimelineSurvivesToolCalls(t *testing.T) {
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: paragraphs(600), ToolCalls: []fakellm.ToolCall{fakellm.Call("c9", "lucy_current_time", `{}`)}, ChunkChars: 50}
	})
	root, _ := f.thread(t)
	target := StreamTarget{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Recipient: "U1"}
	var open TimelineResult
	if err := f.run(t, f.a.StreamSteps, TimelineInput{Target: target, Tasks: []StepTask{{ID: "c1", Title: "checking the time", Status: "complete"}}}, &open); err != nil {
		t.Fatal(err)
	}
	in := streamInput(root)
	in.Stream.TS = open.TS
	var reply ModelReply
	if err := f.run(t, f.a.CallModel, in, &reply); err != nil {
		t.Fatal(err)
	}
	if reply.StreamTS != "" || len(reply.ToolCalls) != 1 {
		t.Errorf("a reply with tool calls: stream %q, %d calls", reply.StreamTS, len(reply.ToolCalls))
	}
	bots := f.botMessages(root)
	if len(bots) != 2 || bots[1].TS != open.TS || !bots[1].Streaming || f.srv.Calls("chat.delete") != 0 {
		t.Fatalf("the timeline after a reply with tool calls: %d messages, %d deletes", len(bots), f.srv.Calls("chat.delete"))
	}
}

// Where Slack will not open a stream, the timeline is unavailable: nothing is posted.
func TestTimelineUnavailable(t *testing.T) {
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "x"} })
	root, _ := f.thread(t)
	f.srv.FailNext("chat.startStream", localslack.Failure{SlackError: "not_allowed"})
	var res TimelineResult
	if err := f.run(t, f.a.StreamSteps, TimelineInput{Target: StreamTarget{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Recipient: "U1"},
		Tasks: []StepTask{{ID: "c1", Title: "checking the time", Status: "in_progress"}}}, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Unavailable || res.TS != "" || len(f.botMessages(root)) != 1 {
		t.Errorf("not_allowed: %+v, %d messages of Lucy's (the placeholder only)", res, len(f.botMessages(root)))
	}
}

// A model call that appended part of the answer to the timeline and broke is retried: the retry
// appends nothing (a call that may repeat an earlier one never appends to the timeline, whatever
// its heartbeat says), so no text shows twice.
func TestRetriedCallModelAppendsToTimelineOnce(t *testing.T) {
	answer := paragraphs(2000)
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply {
		if n == 1 {
			return fakellm.Reply{Content: answer, ChunkChars: 50, BreakAt: 1200}
		}
		return fakellm.Reply{Content: answer, ChunkChars: 50}
	})
	root, _ := f.thread(t)
	var open TimelineResult
	if err := f.run(t, f.a.StreamSteps, TimelineInput{Target: StreamTarget{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Recipient: "U1"},
		Tasks: []StepTask{{ID: "c1", Title: "checking the time", Status: "complete"}}}, &open); err != nil {
		t.Fatal(err)
	}
	in := streamInput(root)
	in.Stream.TS = open.TS
	var reply ModelReply
	if err := f.runWithRetries(t, f.a.CallModel, in, &reply); err != nil {
		t.Fatal(err)
	}
	if len(f.llm.Requests()) != 2 {
		t.Fatalf("%d model requests, want 2 (a broken stream, then a retry)", len(f.llm.Requests()))
	}
	m := f.botMessages(root)[1]
	if m.TS != open.TS || !strings.HasPrefix(answer, m.Text) || m.Text == "" || strings.Count(m.Text, "Sentence 3 of the answer") != 1 {
		t.Errorf("the timeline after a retried call: %.120q, want the first attempt's part only", m.Text)
	}
	if reply.Content != answer || f.srv.Calls("chat.delete") != 0 {
		t.Errorf("reply %d chars, %d deletes", len(reply.Content), f.srv.Calls("chat.delete"))
	}
}

// A reset run's model call (attempt 1 of a new activity, no heartbeat of the original run's) may
// repeat one that already streamed into the timeline it was handed: it appends nothing to it.
func TestResetRunAppendsNothingToTheTimeline(t *testing.T) {
	answer := paragraphs(1500)
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: answer, ChunkChars: 50} })
	root, _ := f.thread(t)
	var open TimelineResult
	if err := f.run(t, f.a.StreamSteps, TimelineInput{Target: StreamTarget{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Recipient: "U1"},
		Tasks: []StepTask{{ID: "c1", Title: "checking the time", Status: "complete"}}}, &open); err != nil {
		t.Fatal(err)
	}
	f.a.resetRuns.Store("default-test-run-id", true)
	in := streamInput(root)
	in.Stream.TS = open.TS
	var reply ModelReply
	if err := f.run(t, f.a.CallModel, in, &reply); err != nil {
		t.Fatal(err)
	}
	if m := f.botMessages(root)[1]; m.TS != open.TS || m.Text != "" || f.srv.Calls("chat.appendStream") != 0 {
		t.Errorf("the timeline after a reset run's call: %.80q, %d appends; want it untouched", m.Text, f.srv.Calls("chat.appendStream"))
	}
	if reply.Content != answer || reply.StreamTS != "" {
		t.Errorf("reply %d chars, stream %q", len(reply.Content), reply.StreamTS)
	}
}

// A model call carries the last batch's outcome (StreamTarget.Steps): the cards are set in the
// timeline, a card no earlier call showed included, before the reply's text, and a call that
// repeats them (a retry) changes nothing more.
func TestCallModelSendsTheStepsItCarries(t *testing.T) {
	answer := paragraphs(1200)
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: answer, ChunkChars: 50}
	})
	root, _ := f.thread(t)
	target := StreamTarget{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Recipient: "U1"}
	var open TimelineResult
	if err := f.run(t, f.a.StreamSteps, TimelineInput{Target: target, Tasks: []StepTask{{ID: "c1", Title: "reading #sales history", Status: "in_progress"}}}, &open); err != nil {
		t.Fatal(err)
	}
	in := streamInput(root)
	in.Stream.TS = open.TS
	in.Stream.Steps = []StepTask{{ID: "c1", Title: "reading #sales history", Status: "complete"}, {ID: "c2", Title: "checking the time", Status: "complete"}}
	for range 2 {
		var reply ModelReply
		if err := f.run(t, f.a.CallModel, in, &reply); err != nil {
			t.Fatal(err)
		}
	}
	bots := f.botMessages(root)
	want := []localslack.Task{{ID: "c1", Title: "reading #sales history", Status: "complete"}, {ID: "c2", Title: "checking the time", Status: "complete"}}
	if len(bots) < 2 || bots[1].TS != open.TS || !slices.Equal(bots[1].Tasks, want) {
		t.Fatalf("the timeline's cards: %+v, want %+v", bots[1].Tasks, want)
	}
	if !strings.Contains(bots[1].Text, "Sentence 3 of the answer") {
		t.Errorf("the reply's text did not stream into the timeline: %.80q", bots[1].Text)
	}
}

// cardBlocks are the task_card blocks of a message, as task cards.
func cardBlocks(t *testing.T, m localslack.Message) []localslack.Task {
	t.Helper()
	var bs []struct {
		Type   string `json:"type"`
		TaskID string `json:"task_id"`
		Title  string `json:"title"`
		Status string `json:"status"`
	}
	if len(m.Blocks) > 0 {
		if err := json.Unmarshal(m.Blocks, &bs); err != nil {
			t.Fatal(err)
		}
	}
	var out []localslack.Task
	for _, b := range bs {
		if b.Type == "task_card" {
			out = append(out, localslack.Task{ID: b.TaskID, Title: b.Title, Status: b.Status})
		}
	}
	return out
}
