package workflows

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/localslack"
)

// threeSteps is a model that reads #sales, fetches a page, then searches and fetches at once, then
// answers: three tool steps in four turns.
func threeSteps(n int, in activities.CallModelInput) (activities.ModelReply, error) {
	switch n {
	case 1:
		return calls(toolCall("c1", "lucy_get_channel_history", map[string]string{"channel": "#sales"})), nil
	case 2:
		return calls(toolCall("c2", "lucy_web_fetch", map[string]string{"url": "https://e.example/a"})), nil
	case 3:
		return calls(
			toolCall("c3", "lucy_read_file", map[string]string{"path": "notes.md"}),
			toolCall("c4", "lucy_web_fetch", map[string]string{"url": "https://e.example/b"})), nil
	}
	return text("Here is what I found."), nil
}

func TestStatusLineAtEachStep(t *testing.T) {
	h := newHarness(t)
	h.statusWorks = true
	h.route.Tools = append(h.route.Tools, "lucy_get_channel_history")
	h.model = threeSteps
	res, err := h.runAgent(runInput("what did #sales say about the launch?"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunCompleted {
		t.Fatalf("status %s", res.Status)
	}
	// The model's turns after the first follow a tool step within the same (test) second: throttled.
	want := []string{
		"is thinking",
		"is reading #sales history",
		"is reading a web page",
		"is looking things up and reading a web page",
		"", // cleared when the answer is complete
	}
	if !reflect.DeepEqual(h.statuses, want) {
		t.Errorf("statuses:\n got %q\nwant %q", h.statuses, want)
	}
	if len(h.updates) != 0 {
		t.Errorf("the placeholder was edited although the status line works: %q", h.updates)
	}
	if len(h.deliveries) != 1 {
		t.Errorf("deliveries %d, want 1", len(h.deliveries))
	}
}

func TestStatusLineFallsBackToPlaceholderOnce(t *testing.T) {
	h := newHarness(t) // Slack answers missing_scope
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n <= 9 {
			return calls(toolCall(fmt.Sprint("c", n), "lucy_web_fetch", map[string]string{"url": fmt.Sprintf("https://e.example/%d", n)})), nil
		}
		return text("done"), nil
	}
	if _, err := h.runAgent(runInput("crawl nine pages")); err != nil {
		t.Fatal(err)
	}
	if len(h.statuses) != 1 {
		t.Errorf("SetThreadStatus asked %d times after missing_scope, want once: %q", len(h.statuses), h.statuses)
	}
	if len(h.updates) != 2 { // the placeholder's progress edits: turn 3 and turn 8
		t.Errorf("progress updates = %d (%v), want 2", len(h.updates), h.updates)
	}
}

func TestStatusLineAsksForApproval(t *testing.T) {
	h := newHarness(t)
	h.statusWorks = true
	h.route.Specs = []activities.ToolFlags{{Name: "lucy_write_file", Destructive: true}}
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(toolCall("w1", "lucy_write_file", map[string]string{"path": "a.md", "content": "x"})), nil
		}
		return text("Written."), nil
	}
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(SignalApproval, Approval{Fingerprint: h.fp(0), Approved: true, User: "U1", Source: "button", Sig: "signed"})
	}, 10*time.Minute)
	in := runInput("write a.md")
	in.KeepStatus = true
	if _, err := h.runAgent(in); err != nil {
		t.Fatal(err)
	}
	// The model's next turn comes ten minutes after the last status (the approval): not throttled.
	// While the run waits for the person, the status is not sent again (keepStatus): the prompt in
	// the thread says what it waits for.
	want := []string{"is thinking", "is writing a file", "is waiting for your approval", "is going over what I found", ""}
	if !reflect.DeepEqual(h.statuses, want) {
		t.Errorf("statuses:\n got %q\nwant %q\norder %q", h.statuses, want, h.order)
	}
}

// A new assistant thread is greeted and offered suggested prompts; its first request titles it, and
// later requests do not.
func TestAssistantThreadPromptsAndTitle(t *testing.T) {
	h := newHarness(t)
	started := msg("100.1", "U1", "")
	started.Kind, started.IsDM = "assistant_thread_started", true
	first := msg("100.2", "U1", "<@ULUCY>   Summarize   the launch plan for the sales team, with owners and dates please")
	first.IsDM = true
	second := msg("100.3", "U1", "now the marketing plan")
	second.IsDM = true
	h.runLane(started, signalAt(time.Minute, SignalMessage, first), signalAt(time.Hour, SignalMessage, second))
	var got []string
	for _, o := range h.order {
		if o == "prompts" || strings.HasPrefix(o, "title:") {
			got = append(got, o)
		}
	}
	want := []string{"prompts", "title:Summarize the launch plan for the sales team, with owners an…"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("assistant thread calls %q, want %q", got, want)
	}
	if len(h.posts) == 0 || !strings.Contains(h.posts[0].Text, "I'm Lucy") {
		t.Errorf("no greeting: %+v", h.posts)
	}
	if len(h.deliveries) != 2 {
		t.Errorf("%d answers, want 2", len(h.deliveries))
	}
}

// The channel the person looks at (assistant_thread_context_changed) reaches the next run's prompt as
// data; the context change itself starts nothing.
func TestContextChannelReachesThePrompt(t *testing.T) {
	h := newHarness(t)
	started := msg("100.1", "U1", "")
	started.Kind, started.IsDM, started.ContextChannel = "assistant_thread_started", true, "C1"
	changed := msg("100.2", "U1", "")
	changed.Kind, changed.IsDM, changed.ContextChannel = KindContextChanged, true, "CSALES"
	ask := msg("100.3", "U1", "summarize this channel")
	ask.IsDM = true
	h.runLane(started, signalAt(time.Minute, SignalMessage, changed), signalAt(2*time.Minute, SignalMessage, ask))
	if len(h.promptIns) != 1 || h.promptIns[0].ViewingChannel != "CSALES" {
		t.Fatalf("prompt inputs %+v, want one run looking at CSALES", h.promptIns)
	}
	if len(h.deliveries) != 1 {
		t.Errorf("%d answers, want 1 (a context change is not a request)", len(h.deliveries))
	}
}

// The lane shows the first sign of life: the status line says Lucy is thinking before the run has
// opened (its placeholder), and the run takes the line over without setting it again; where Slack
// does not offer the line, the run does not ask again either.
func TestLaneSaysThinkingBeforeTheRunOpens(t *testing.T) {
	for _, works := range []bool{true, false} {
		h := newHarness(t)
		h.statusWorks = works
		h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
			return text("It is noon."), nil
		}
		h.runLane(msg("100.1", "U1", "<@ULUCY> what time is it?"))
		want := []string{"is thinking"}
		if works {
			want = append(want, "") // cleared by the run when the answer is complete
		}
		if !reflect.DeepEqual(h.statuses, want) {
			t.Errorf("status line works %v: statuses %q, want %q", works, h.statuses, want)
		}
		first, open := -1, -1
		for i, o := range h.order {
			if o == "status:is thinking" && first < 0 {
				first = i
			}
			if o == "open" && open < 0 {
				open = i
			}
		}
		if first < 0 || open < 0 || first > open {
			t.Errorf("status line works %v: order %q, want the status before the run opens", works, h.order)
		}
		if len(h.delivered) != 1 {
			t.Errorf("status line works %v: %d answers, want 1", works, len(h.delivered))
		}
	}
}

// A step that runs longer than Slack shows a status without a message (two minutes) keeps its
// status line (keepStatus): the run sends it again every statusRefresh. The statuses go
// through the real activity to a local Slack on the workflow's clock, which removes a status two
// minutes after it was last set, as Slack does: four minutes and fifty seconds into a five-minute
// tool call, the person still sees what Lucy is doing, in one whole loading message.
func TestStatusLineKeptThroughALongStep(t *testing.T) {
	h := newHarness(t)
	h.statusWorks = true
	ws, apiURL := localslack.NewTestServer(t, localslack.Options{Team: "T1", Now: h.env.Now,
		Channels: []localslack.Channel{{ID: "C1", Name: "general"}}, Users: []localslack.User{{ID: "U1", Name: "you"}}})
	api := slack.New(localslack.DefaultToken, slack.OptionAPIURL(apiURL))
	_, root, err := api.PostMessage("C1", slack.MsgOptionText("<@ULUCY> read the launch page", false), slack.MsgOptionUser("U1"))
	if err != nil {
		t.Fatal(err)
	}
	acts := &activities.Activities{Slack: func(string) activities.SlackAPI { return api }, Log: zerolog.Nop()}
	h.statusSlack = func(in activities.ThreadStatusInput) {
		in.ThreadTS = root
		if _, err := acts.SetThreadStatus(context.Background(), in); err != nil {
			t.Errorf("SetThreadStatus on the local Slack: %v", err)
		}
	}
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(toolCall("c1", "lucy_web_fetch", map[string]string{"url": "https://e.example/launch"})), nil
		}
		return text("Here is the page."), nil
	}
	h.toolMock.After(5 * time.Minute)
	var shown string
	var loading []string
	h.env.RegisterDelayedCallback(func() {
		shown, loading = ws.Status("C1", root), ws.LoadingMessages("C1", root)
	}, 4*time.Minute+50*time.Second)
	in := runInput("read the launch page")
	in.KeepStatus = true // as every lane sets it
	res, err := h.runAgent(in)
	if err != nil || res.Status != RunCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	if shown != "is reading a web page" || len(loading) != 1 || loading[0] != "is reading a web page…" {
		t.Errorf("at 4m50s the thread shows %q %q", shown, loading)
	}
	// Sent at the step's start, then again at 90, 180 and 270 seconds; the next turn; cleared at the end.
	want := []string{"is thinking", "is reading a web page", "is reading a web page", "is reading a web page", "is reading a web page",
		"is going over what I found", ""}
	if !reflect.DeepEqual(h.statuses, want) {
		t.Errorf("statuses:\n got %q\nwant %q", h.statuses, want)
	}
	if ws.Status("C1", root) != "" {
		t.Errorf("status after the run: %q", ws.Status("C1", root))
	}
}

// Under agent_view a person opening Lucy's DM (app_home_opened, tab messages) reaches the DM's own
// lane, which sets the DM's suggested prompts without thread_ts (with it, Slack silently ignores the
// call), at most once an hour, and neither greets nor runs anything.
func TestMessagesTabSetsTheDMsPrompts(t *testing.T) {
	h := newHarness(t)
	key := LaneKey{Team: "T1", Channel: "D1", ThreadTS: MessagesTabThreadTS}
	opened := func(ts string) Message {
		return Message{EventID: "Ev" + ts, Team: "T1", Channel: "D1", TS: ts, ThreadTS: MessagesTabThreadTS, User: "U1",
			Kind: KindMessagesTabOpened, IsDM: true}
	}
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(SignalMessage, opened("200.1")) }, 0)
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(SignalMessage, opened("200.2")) }, 10*time.Minute)
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(SignalMessage, opened("200.3")) }, 2*time.Hour)
	h.env.ExecuteWorkflow(LaneWorkflowName, LaneInput{Key: key})
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"D1/", "D1/"}; !reflect.DeepEqual(h.promptThreads, want) {
		t.Errorf("prompts set at %q, want %q", h.promptThreads, want)
	}
	if len(h.posts) != 0 || len(h.deliveries) != 0 || len(h.statuses) != 0 {
		t.Errorf("posts %+v, answers %d, statuses %q", h.posts, len(h.deliveries), h.statuses)
	}
}

// A run started before the status line was kept (its input has no KeepStatus) replays as it ran:
// no timer, no status sent again.
func TestStatusLineNotKeptInAnOlderRun(t *testing.T) {
	h := newHarness(t)
	h.statusWorks = true
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(toolCall("c1", "lucy_web_fetch", map[string]string{"url": "https://e.example/launch"})), nil
		}
		return text("Here is the page."), nil
	}
	h.toolMock.After(5 * time.Minute)
	if _, err := h.runAgent(runInput("read the launch page")); err != nil {
		t.Fatal(err)
	}
	want := []string{"is thinking", "is reading a web page", "is going over what I found", ""}
	if !reflect.DeepEqual(h.statuses, want) {
		t.Errorf("statuses:\n got %q\nwant %q", h.statuses, want)
	}
}
