package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/output"
)

// streamAnswer is a long answer in numbered sentences, so that order and duplicates show.
func streamAnswer() string {
	var b strings.Builder
	for i := 0; b.Len() < 2500; i++ {
		fmt.Fprintf(&b, "Step %d of the explanation follows the one before it. ", i)
		if i%6 == 5 {
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

// streamingMessage returns Lucy's message in the thread that is still streaming.
func (s *stack) streamingMessage(root string) (localslack.Message, bool) {
	for _, m := range s.botMessages(root) {
		if m.Streaming {
			return m, true
		}
	}
	return localslack.Message{}, false
}

// checkOneAnswer fails unless the thread holds exactly one message of Lucy's: the whole answer,
// rendered, with no text twice and nothing still streaming.
func (s *stack) checkOneAnswer(t *testing.T, root, answer string) {
	t.Helper()
	want := output.RenderMarkdown(answer, nil)
	bots := s.botMessages(root)
	if len(bots) != len(want) {
		t.Fatalf("%d messages of Lucy's in the thread, want %d (the answer only)", len(bots), len(want))
	}
	for i, m := range bots {
		if m.Text != want[i].Text || m.Streaming {
			t.Errorf("message %d: streaming %v, text %.80q, want %.80q", i, m.Streaming, m.Text, want[i].Text)
		}
	}
	if n := strings.Count(bots[0].Text, "Step 7 of the explanation"); n != 1 {
		t.Errorf("a sentence shows %d times", n)
	}
}

// The answer is streamed into the thread as the model writes it, in order, and the streamed
// message becomes the answer: the placeholder goes, one message stays.
func TestStreamedAnswerEndToEnd(t *testing.T) {
	answer := streamAnswer()
	stall, stalled := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if len(req.Tools) == 0 { // the memory step's proposals, not the agent's model call
			return fakellm.Reply{Content: "[]"}
		}
		r := fakellm.Reply{Content: answer, ChunkChars: 25}
		once.Do(func() { r.StallAt, r.Stall, r.Stalled = 1000, stall, stalled })
		return r
	})
	text := "<@ULUCY> explain how the pipeline works"
	root := s.say(text, "")
	s.event("app_mention", "Ev-stream-1", text, root, "", human)

	select {
	case <-stalled:
	case <-time.After(2 * time.Minute):
		t.Fatal("the model was never asked for a streamed answer")
	}
	var partial localslack.Message
	s.waitFor("the stream to show the first part of the answer", time.Minute, func() bool {
		m, ok := s.streamingMessage(root)
		partial = m
		return ok && len(m.Text) >= 700
	})
	if !strings.HasPrefix(answer, partial.Text) {
		t.Fatalf("while streaming, the message is not the start of the answer in order: %.120q", partial.Text)
	}
	if partial.Appends < 2 {
		t.Errorf("%d appends before the stall: the answer was not streamed in chunks", partial.Appends)
	}
	close(stall)
	s.waitFor("the answer", time.Minute, func() bool {
		_, streaming := s.streamingMessage(root)
		return !streaming && s.delivered(root, answer)
	})
	s.checkOneAnswer(t, root, answer)
	if bots := s.botMessages(root); bots[0].TS != partial.TS {
		t.Errorf("the answer is %s, not the streamed message %s", bots[0].TS, partial.TS)
	}
}

// The worker is killed with SIGKILL while the answer streams, and a new one started: the retried
// model call deletes the half stream, and the thread ends with exactly one complete answer.
func TestWorkerKilledMidStream(t *testing.T) {
	answer := streamAnswer()
	stalled := make(chan struct{})
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	var mu sync.Mutex
	streams := 0
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if len(req.Tools) == 0 { // the memory step's proposals, not the agent's model call
			return fakellm.Reply{Content: "[]"}
		}
		mu.Lock()
		defer mu.Unlock()
		streams++
		if streams == 1 { // the first attempt stalls mid-answer until its worker dies
			return fakellm.Reply{Content: answer, ChunkChars: 25, StallAt: 1000, Stall: never, Stalled: stalled}
		}
		return fakellm.Reply{Content: answer, ChunkChars: 25}
	})
	s.stopWorker()
	proc := s.startWorkerProcess(t)
	text := "<@ULUCY> explain how the pipeline works"
	root := s.say(text, "")
	s.event("app_mention", "Ev-stream-kill", text, root, "", human)
	select {
	case <-stalled:
	case <-time.After(2 * time.Minute):
		t.Fatal("the model was never asked for a streamed answer")
	}
	s.waitFor("the half stream", time.Minute, func() bool {
		m, ok := s.streamingMessage(root)
		return ok && len(m.Text) >= 700
	})
	// Let a heartbeat carry the stream's ts to the server before the kill (it is sent within the
	// heartbeat throttle of the attempt).
	s.waitFor("the stream's heartbeat", time.Minute, func() bool { return s.streamHeartbeat(t, root) })
	proc.kill()
	s.startWorkerProcess(t)
	s.waitFor("one complete answer", 3*time.Minute, func() bool {
		_, streaming := s.streamingMessage(root)
		return !streaming && s.delivered(root, answer)
	})
	s.checkOneAnswer(t, root, answer)
}

// delivered reports whether the thread's only message of Lucy's is the first part of the rendered
// answer.
func (s *stack) delivered(root, answer string) bool {
	bots := s.botMessages(root)
	return len(bots) == len(output.RenderMarkdown(answer, nil)) && bots[0].Text == output.RenderMarkdown(answer, nil)[0].Text
}

// streamHeartbeat reports whether the run's pending model call has recorded its stream in a
// heartbeat (activities.StreamBeat) on the server.
func (s *stack) streamHeartbeat(t *testing.T, root string) bool {
	run := s.lastRunOrEmpty(root)
	if run == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	desc, err := s.client.DescribeWorkflowExecution(ctx, run, "")
	if err != nil {
		return false
	}
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetActivityType().GetName() != "CallModel" || pa.GetHeartbeatDetails() == nil {
			continue
		}
		var b activities.StreamBeat
		if converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &b) == nil && len(b.TSs) > 0 {
			return true
		}
	}
	return false
}

// A run reset from the Web UI (to its first, a middle and its last workflow task) after it streamed
// its answer streams no second answer: the thread keeps exactly one answer and no stream is started
// again.
func TestResetDoesNotStreamTwice(t *testing.T) {
	answer := "Here is the streamed answer. " + streamAnswer()
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if len(req.Tools) == 0 { // the memory step's proposals, not the agent's model call
			return fakellm.Reply{Content: "[]"}
		}
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			return fakellm.Reply{Content: answer, ChunkChars: 40}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_current_time", `{"timezone":"Europe/Paris"}`)}}
	})
	text := "<@ULUCY> what time is it in Paris, and explain the pipeline"
	root := s.say(text, "")
	s.event("app_mention", "Ev-stream-reset", text, root, "", human)
	s.waitFor("the answer", 60*time.Second, func() bool { return s.delivered(root, answer) })
	if n := s.slack.Calls("chat.startStream"); n != 1 {
		t.Fatalf("%d streams started for one answer", n)
	}
	run := s.currentOrLastRun(t, root)
	s.waitFor("the run to complete", 30*time.Second, func() bool { return s.runStatus(t, run) == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED })
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	d, err := s.client.DescribeWorkflowExecution(dctx, run, "")
	dcancel()
	if err != nil {
		t.Fatal(err)
	}
	firstRun := d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
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
			Namespace: s.cfg.TemporalNamespace, WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: run, RunId: firstRun},
			Reason: fmt.Sprintf("test reset %d", i), WorkflowTaskFinishEventId: p, RequestId: fmt.Sprintf("stream-reset-%d", i),
		})
		cancel()
		if err != nil {
			t.Fatalf("reset to event %d: %v", p, err)
		}
		s.waitFor(fmt.Sprintf("reset %d to complete", i), 60*time.Second, func() bool {
			return s.runStatusOf(t, run, resp.GetRunId()) == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		})
		if !s.delivered(root, answer) {
			t.Errorf("after reset to event %d: the thread is not exactly the answer (%d messages of Lucy's): %.200q", p, len(s.botMessages(root)), s.botMessages(root)[0].Text)
		}
		if n := s.slack.Calls("chat.startStream"); n != 1 {
			t.Errorf("after reset to event %d: %d streams started, want the first one only", p, n)
		}
	}
}

// A three-step run shows its steps as task cards in one stream while it works, in order, each
// ending complete, and the answer is streamed into the same message below them; the message that
// stays is the answer with its steps. A step's update that Slack applied but whose answer was lost
// (a 500 after the effect) is retried and shows no task twice.
func TestTimelineEndToEnd(t *testing.T) {
	answer := streamAnswer()
	stall, stalled := make(chan struct{}), make(chan struct{})
	var once sync.Once
	zones := []string{"Europe/Paris", "Asia/Tokyo", "America/New_York"}
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if len(req.Tools) == 0 { // the memory step's proposals, not the agent's model call
			return fakellm.Reply{Content: "[]"}
		}
		steps := 0
		for _, m := range req.Messages {
			if m.Role == "tool" {
				steps++
			}
		}
		if steps < len(zones) {
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call(fmt.Sprintf("c%d", steps+1), "lucy_current_time", fmt.Sprintf(`{"timezone":%q}`, zones[steps]))}}
		}
		r := fakellm.Reply{Content: answer, ChunkChars: 25}
		once.Do(func() { r.StallAt, r.Stall, r.Stalled = 1000, stall, stalled })
		return r
	})
	s.slack.FailNext("chat.appendStream", localslack.Failure{Status: 500, AfterEffect: true})
	text := "<@ULUCY> what time is it in Paris, Tokyo and New York, and explain the pipeline"
	root := s.say(text, "")
	s.event("app_mention", "Ev-timeline-1", text, root, "", human)

	select {
	case <-stalled:
	case <-time.After(2 * time.Minute):
		t.Fatal("the model was never asked for the answer")
	}
	var partial localslack.Message
	s.waitFor("the answer streaming below the steps", time.Minute, func() bool {
		m, ok := s.streamingMessage(root)
		partial = m
		return ok && len(m.Text) >= 700
	})
	checkTasks := func(when string, m localslack.Message) {
		t.Helper()
		cards := m.Cards() // the stream's cards while it streams, the answer's task_card blocks after
		if len(cards) != len(zones) {
			t.Fatalf("%s: %d tasks, want %d (one a step): %+v", when, len(cards), len(zones), cards)
		}
		for i, task := range cards {
			if task.ID != fmt.Sprintf("c%d", i+1) || task.Status != "complete" || task.Title != "checking the time" {
				t.Errorf("%s: task %d is %+v, want c%d complete with its step's words", when, i, task, i+1)
			}
		}
		if m.TaskDisplay != "timeline" {
			t.Errorf("%s: task_display_mode %q, want timeline", when, m.TaskDisplay)
		}
	}
	checkTasks("while the answer streams", partial)
	if *screenshot != "" {
		writeScreenshot(t, s.slack.Messages(channel, root), *screenshot)
	}
	if !strings.HasPrefix(answer, partial.Text) {
		t.Fatalf("while streaming, the message is not the start of the answer in order: %.120q", partial.Text)
	}
	if n := s.slack.Calls("chat.startStream"); n != 1 {
		t.Errorf("%d streams started, want one: the steps and the answer in the same stream", n)
	}
	close(stall)
	s.waitFor("the answer", time.Minute, func() bool {
		_, streaming := s.streamingMessage(root)
		return !streaming && s.delivered(root, answer)
	})
	s.checkOneAnswer(t, root, answer)
	bots := s.botMessages(root)
	if bots[0].TS != partial.TS {
		t.Errorf("the answer is %s, not the stream of the steps %s", bots[0].TS, partial.TS)
	}
	checkTasks("the answer", bots[0])
}
