package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/workflows/agent"
)

func TestPlainAnswer(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		return activities.ModelReply{Content: "Paris is the capital of France.", Model: "gpt", Usage: activities.TokenUsage{Prompt: 50, Completion: 7}}, nil
	}
	res, err := h.runAgent(runInput("what is the capital of France?"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunCompleted || h.answer() != "Paris is the capital of France." {
		t.Fatalf("status %s answer %q", res.Status, h.answer())
	}
	if len(h.modelCalls) != 1 {
		t.Fatalf("model calls = %d, want 1", len(h.modelCalls))
	}
	first := h.modelCalls[0].Transcript
	// The prompt is built by a local activity (changeLeanStart), and the thread is read by one
	// (changeLocalOpen): the first call carries both inline.
	if first.Base != "" || len(first.Entries) != 2 || first.Entries[0].Text != "You are Lucy." || first.Entries[0].Ref != "" ||
		first.Entries[1].Text != "hello" || first.Entries[1].Ref != "" {
		t.Errorf("first call should carry the prompt and the thread inline, got %+v", first)
	}
	if u := res.Usage["gpt"]; u.PromptTokens != 50 || u.CompletionTokens != 7 || u.Calls != 1 {
		t.Errorf("usage = %+v", res.Usage)
	}
}

// A plain answer dispatches one activity, the model call: the opening (OpenRun), the delivery and the
// memory step run as local activities in the workflow tasks around it (changeLocalOpen,
// changeLocalFinish).
func TestPlainAnswerDispatchesOnlyTheModelCall(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	var dispatched, local []string
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		mu.Lock()
		defer mu.Unlock()
		dispatched = append(dispatched, info.ActivityType.Name)
	})
	h.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		mu.Lock()
		defer mu.Unlock()
		local = append(local, info.ActivityType.Name)
	})
	if _, err := h.runAgent(runInput("remember that the launch is on Friday")); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dispatched, []string{"CallModel"}) {
		t.Errorf("activities dispatched = %v, want only CallModel", dispatched)
	}
	for _, name := range []string{"OpenRun", "DeliverAnswer", "NoteFromRun"} {
		if !slices.Contains(local, name) {
			t.Errorf("%s did not run as a local activity (local activities: %v)", name, local)
		}
	}
}

// The thread a local activity read (changeLocalOpen) is sent inline by the first model call only:
// the next call builds on that call's transcript (Base) and carries none of it again.
func TestThreadInlineOnce(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(toolCall("c1", "lucy_read_file", map[string]string{"path": "notes.md"})), nil
		}
		return activities.ModelReply{Content: "Done."}, nil
	}
	if _, err := h.runAgent(runInput("what is in my notes?")); err != nil {
		t.Fatal(err)
	}
	if len(h.modelCalls) != 2 {
		t.Fatalf("model calls = %d, want 2", len(h.modelCalls))
	}
	if !h.sawInline(0, "user: hello") {
		t.Errorf("the first call did not carry the thread: %v", h.inlineTexts(0))
	}
	second := h.modelCalls[1].Transcript
	if second.Base == "" || h.sawInline(1, "user: hello") {
		t.Errorf("the second call should build on the first and not carry the thread again: %+v", second)
	}
}

func TestCurrentMessageInlinedWhenNotInThread(t *testing.T) {
	h := newHarness(t)
	h.thread = activities.ThreadHistory{}
	if _, err := h.runAgent(runInput("summarize this")); err != nil {
		t.Fatal(err)
	}
	if !h.sawInline(0, "user: summarize this") {
		t.Errorf("the message was not sent: %v", h.inlineTexts(0))
	}
}

func TestParallelToolsAndTranscriptReferences(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(
				toolCall("c1", "lucy_web_fetch", map[string]string{"url": "https://a.example"}),
				toolCall("c2", "lucy_read_file", map[string]string{"path": "notes.md"}),
			), nil
		}
		return text("Both read."), nil
	}
	res, err := h.runAgent(runInput("read both"))
	if err != nil || res.Status != RunCompleted {
		t.Fatalf("%v %+v", err, res)
	}
	if len(h.toolCalls) != 2 {
		t.Fatalf("tool calls = %d", len(h.toolCalls))
	}
	second := h.modelCalls[1].Transcript
	if second.Base == "" {
		t.Fatal("second call should build on the first by reference")
	}
	// assistant reply + two tool results, all by reference, nothing re-sent
	if len(second.Entries) != 3 || second.Entries[0].Role != "assistant" || second.Entries[0].Ref == "" ||
		second.Entries[1].Ref == "" || second.Entries[1].ToolCallID != "c1" || second.Entries[2].ToolCallID != "c2" {
		t.Errorf("second call entries = %+v", second.Entries)
	}
	for _, e := range second.Entries {
		if e.Text != "" {
			t.Errorf("body copied into history: %+v", e)
		}
	}
}

func TestUnknownToolAndBadArgsGoToTheModel(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(toolCall("c1", "no_such_tool", map[string]string{}), toolCall("c2", "lucy_read_file", map[string]string{})), nil
		}
		return text("fixed"), nil
	}
	h.tool = func(in activities.ExecuteToolInput) (activities.ToolResult, error) {
		return activities.ToolResult{}, temporal.NewNonRetryableApplicationError("path is required", activities.ErrToolArgs, nil)
	}
	if _, err := h.runAgent(runInput("x")); err != nil {
		t.Fatal(err)
	}
	if !h.sawInline(1, "no tool named no_such_tool") || !h.sawInline(1, "invalid arguments for lucy_read_file") {
		t.Errorf("errors not shown to the model: %v", h.inlineTexts(1))
	}
	// What the model reads, and may pass on to a person, is said once and without the SDK's
	// rendering of the error (changeToolErrorText).
	if !h.sawInline(1, "tool: Error: invalid arguments for lucy_read_file: path is required") {
		t.Errorf("the bad call's error is not the activity's words: %v", h.inlineTexts(1))
	}
	for _, text := range h.inlineTexts(1) {
		if strings.Contains(text, "(type: ") || strings.Count(text, "invalid arguments for") > 1 {
			t.Errorf("the model reads %q", text)
		}
	}
}

func TestEmptyNudgeThenEscalateThenPartial(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		return activities.ModelReply{Model: "m"}, nil
	}
	res, err := h.runAgent(runInput("do the thing"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunPartial {
		t.Errorf("status = %s", res.Status)
	}
	if tiers := h.tiers(); len(tiers) != 3 || tiers[0] != "default" || tiers[2] != "frontier" {
		t.Errorf("tiers = %v, want default, default, frontier", tiers)
	}
	if !h.sawInline(1, agent.NudgeEmpty) {
		t.Error("no nudge after the first empty answer")
	}
	if a := h.answer(); a == "" || strings.Contains(a, "lucy_") || strings.Contains(a, "{") {
		t.Errorf("partial answer %q", a)
	}
}

func TestNarrationNudge(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return text("I will now call the web fetch tool to read the page."), nil
		}
		return text("The page says hello."), nil
	}
	if _, err := h.runAgent(runInput("read https://x.example")); err != nil {
		t.Fatal(err)
	}
	if !h.sawInline(1, agent.NudgeNarration) {
		t.Errorf("no narration nudge: %v", h.inlineTexts(1))
	}
	if h.answer() != "The page says hello." {
		t.Errorf("answer %q", h.answer())
	}
}

func TestHTTP400EscalatesToFrontier(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if in.Tier != "frontier" {
			return activities.ModelReply{}, temporal.NewNonRetryableApplicationError("HTTP 400", activities.ErrModelBadRequest, nil)
		}
		return text("ok"), nil
	}
	res, err := h.runAgent(runInput("hi there, please compute"))
	if err != nil || res.Status != RunCompleted || res.Tier != "frontier" {
		t.Fatalf("%v %+v", err, res)
	}
}

func TestLoopDetectionLadder(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if in.ToolChoice == "ask_human" {
			return calls(toolCall("q", "ask_human", map[string]string{"question": "Which site did you mean?"})), nil
		}
		if n > 40 || strings.Contains(fmt.Sprint(in.Transcript.Entries), "The person answered: the docs site") {
			return text("Fetched the docs site."), nil
		}
		return calls(toolCall(fmt.Sprint("c", n), "lucy_web_fetch", map[string]string{"url": "https://same.example"})), nil
	}
	// The forced question pauses the run; the person's answer (routed by the lane) lets it go on.
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(SignalMessage, Message{Team: "T1", Channel: "C1", TS: "100.9", ThreadTS: "100.1", User: "U1", Text: "the docs site"})
	}, time.Hour)
	res, err := h.runAgent(runInput("fetch it"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunCompleted || h.answer() != "Fetched the docs site." {
		t.Fatalf("status %s answer %q", res.Status, h.answer())
	}
	if q := h.deliveries[0]; q.Markdown != "Which site did you mean?" || !strings.HasPrefix(q.KeyPrefix, "question-") {
		t.Errorf("the question was not delivered in the thread: %+v", q)
	}
	var levels []string
	for i := range h.modelCalls {
		for _, s := range h.inlineTexts(i) {
			if strings.Contains(s, "[Lucy runtime]") {
				levels = append(levels, s)
			}
		}
	}
	if len(levels) < 3 {
		t.Errorf("expected soft, hard and forced ask_human steps, got %d injections: %v", len(levels), levels)
	}
}

func TestStuckDetectionEscalates(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n <= 6 {
			name := []string{"lucy_read_file", "lucy_web_fetch", "lucy_list_files"}[n%3]
			return calls(toolCall(fmt.Sprint("c", n), name, map[string]string{"path": fmt.Sprintf("f%d.md", n)})), nil
		}
		return text("done"), nil
	}
	h.tool = func(in activities.ExecuteToolInput) (activities.ToolResult, error) {
		return activities.ToolResult{Content: "Error: file not found", IsError: true}, nil
	}
	res, err := h.runAgent(runInput("read files"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for i := range h.modelCalls {
		if h.sawInline(i, "stuck") || h.sawInline(i, "different approach") {
			found = true
		}
	}
	if !found {
		t.Error("no stuck intervention")
	}
	if agent.TierRank(res.Tier) <= agent.TierRank("default") {
		t.Errorf("tier after repeated errors = %s, want escalated", res.Tier)
	}
}

func TestSupervisorDecisions(t *testing.T) {
	tests := []struct {
		verdict string
		check   func(t *testing.T, h *harness, res RunResult)
	}{
		{"C", func(t *testing.T, h *harness, res RunResult) {
			if res.Status != RunCompleted {
				t.Errorf("status %s", res.Status)
			}
		}},
		{"I: try the archive page instead", func(t *testing.T, h *harness, res RunResult) {
			found := false
			for i := range h.modelCalls {
				found = found || h.sawInline(i, "try the archive page instead")
			}
			if !found {
				t.Error("guidance not injected")
			}
		}},
		{"R: search the docs first", func(t *testing.T, h *harness, res RunResult) {
			plans := 0
			for _, c := range h.completes {
				if c.Prompt == "PLANNER.md" {
					plans++
				}
			}
			if plans == 0 {
				t.Error("no replan")
			}
		}},
		{"E", func(t *testing.T, h *harness, res RunResult) {
			if res.Tier == "default" {
				t.Errorf("tier %s, want escalated", res.Tier)
			}
		}},
		{"A: Which quarter do you mean?", func(t *testing.T, h *harness, res RunResult) {
			// The question pauses the run; the answer arrives an hour later and the run goes on.
			if res.Status != RunCompleted || len(h.deliveries) != 2 || h.deliveries[0].Markdown != "Which quarter do you mean?" {
				t.Errorf("status %s deliveries %+v", res.Status, h.deliveries)
			}
			got := false
			for i := range h.modelCalls {
				got = got || h.sawInline(i, "user: Q3, please")
			}
			if !got {
				t.Error("the model did not get the answer")
			}
		}},
		{"X: the data source does not exist", func(t *testing.T, h *harness, res RunResult) {
			if res.Status != RunPartial || h.answer() == "" {
				t.Errorf("status %s answer %q", res.Status, h.answer())
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.verdict[:1], func(t *testing.T) {
			h := newHarness(t)
			h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
				if n <= 4 {
					return calls(toolCall(fmt.Sprint("c", n), "lucy_web_fetch", map[string]string{"url": fmt.Sprintf("https://e.example/%d", n)})), nil
				}
				return text("Here is the full result with everything you asked for, checked and complete."), nil
			}
			h.complete = func(in activities.CompleteInput) (activities.Completion, error) {
				switch in.Prompt {
				case "SUPERVISOR.md":
					return activities.Completion{Text: tt.verdict, Model: "m-fast"}, nil
				case "PLANNER.md":
					return activities.Completion{Text: "GOAL: read\n1. search [tool: lucy_web_fetch]\n2. answer\nSUCCESS: answered", Model: "m-fast"}, nil
				}
				return activities.Completion{Text: "s", Model: "m-fast"}, nil
			}
			h.env.RegisterDelayedCallback(func() {
				h.env.SignalWorkflow(SignalMessage, Message{Team: "T1", Channel: "C1", TS: "100.9", ThreadTS: "100.1", User: "U1", Text: "Q3, please"})
			}, time.Hour)
			res, err := h.runAgent(runInput("look this up"))
			if err != nil {
				t.Fatal(err)
			}
			sup := 0
			for i, c := range h.completes {
				if c.Prompt == "SUPERVISOR.md" {
					sup++
					if !h.completeLocal[i] { // changeLocalCheckpoint
						t.Errorf("checkpoint %d ran as an activity, want a local activity in the turn's workflow task", sup)
					}
				}
			}
			if sup == 0 {
				t.Fatal("supervisor never ran")
			}
			tt.check(t, h, res)
		})
	}
}

func TestPlanForComplexTask(t *testing.T) {
	h := newHarness(t)
	h.route.Intent = "research"
	h.complete = func(in activities.CompleteInput) (activities.Completion, error) {
		if in.Prompt == "PLANNER.md" {
			return activities.Completion{Text: "GOAL: compare\n1. read A [tool: lucy_web_fetch]\n2. read B [tool: lucy_web_fetch]\nSUCCESS: comparison delivered", Model: "f"}, nil
		}
		return activities.Completion{Text: "C", Model: "f"}, nil
	}
	if _, err := h.runAgent(runInput("please research and compare the pricing pages of vendor A and vendor B for me")); err != nil {
		t.Fatal(err)
	}
	if !h.sawInline(0, "<execution_plan>") {
		t.Errorf("plan not injected: %v", h.inlineTexts(0))
	}
}

func TestJournalTools(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		switch n {
		case 1:
			return calls(
				toolCall("j1", "update_run_journal", map[string]string{"objective": "Ship the report", "current_state": "drafting"}),
				toolCall("j2", "append_run_journal_entry", map[string]string{"section": "verified_findings", "entry": "Q3 revenue is 1.2M"}),
			), nil
		case 2:
			return calls(toolCall("j3", "get_run_journal", map[string]string{})), nil
		}
		return text("done"), nil
	}
	if _, err := h.runAgent(runInput("write the report")); err != nil {
		t.Fatal(err)
	}
	if len(h.toolCalls) != 0 {
		t.Errorf("journal tools must run in the workflow, not as activities: %v", h.toolCalls)
	}
	if !h.sawInline(2, "Q3 revenue is 1.2M") {
		t.Errorf("journal not returned to the model: %v", h.inlineTexts(2))
	}
	if !h.sawInline(2, "<run_journal>") {
		t.Error("journal digest not in the system part")
	}
}

func TestQualityGateRetriesOnceWithStrongerModel(t *testing.T) {
	h := newHarness(t)
	h.route.Intent = "data"
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return text("I can't find it."), nil
		}
		return text("Here are all 42 rows you asked for, summarized by region with totals, plus the full table attached as a CSV file."), nil
	}
	res, err := h.runAgent(runInput("export all the customer data for every region as a spreadsheet and summarize totals per region"))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.modelCalls) != 2 {
		t.Fatalf("model calls = %d, want a single gate retry", len(h.modelCalls))
	}
	if e := h.modelCalls[1].Transcript.Entries; len(e) < 2 || e[0].Role != "assistant" || !strings.HasPrefix(e[0].Ref, "model-") {
		t.Errorf("the retry does not show the model its first answer: %+v", e)
	}
	if agent.TierRank(h.modelCalls[1].Tier) <= agent.TierRank(h.modelCalls[0].Tier) {
		t.Errorf("retry tier %s not above %s", h.modelCalls[1].Tier, h.modelCalls[0].Tier)
	}
	if res.Status != RunCompleted || !strings.Contains(h.answer(), "42 rows") {
		t.Errorf("status %s answer %q", res.Status, h.answer())
	}
}

func TestToolResultSummarizedAboveThreshold(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			// A channel's history: long, and no exact text needed (file and page reads are never summarized).
			return calls(toolCall("c1", "lucy_get_channel_history", map[string]string{"channel": "C1"})), nil
		}
		return text("ok"), nil
	}
	big := strings.Repeat("word ", 3000)
	h.tool = func(in activities.ExecuteToolInput) (activities.ToolResult, error) {
		return activities.ToolResult{Content: big, Chars: len(big)}, nil
	}
	if _, err := h.runAgent(runInput("read the big page")); err != nil {
		t.Fatal(err)
	}
	var sum *activities.CompleteInput
	for i, c := range h.completes {
		if c.Prompt == "SUMMARIZER.md" {
			sum = &h.completes[i]
		}
	}
	if sum == nil || len(sum.Document.Entries) != 1 || sum.Document.Entries[0].Ref == "" {
		t.Fatalf("summary not requested by reference: %+v", sum)
	}
	last := h.modelCalls[1].Transcript.Entries
	if e := last[len(last)-1]; !strings.HasPrefix(e.Ref, "summary-") {
		t.Errorf("the model should see the summary, got %+v", e)
	}
}

func TestCompactionAndRecoveryLadder(t *testing.T) {
	h := newHarness(t)
	// A small window model: gpt-3.5-ish unknown name falls back to the default window; make results
	// big so the estimate crosses 70% quickly.
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if in.ToolChoice == "ask_human" {
			return calls(toolCall("q", "ask_human", map[string]string{"question": agent.AskHumanContext})), nil
		}
		// Rotate tools so loop detection stays quiet; a small window makes the context fill up.
		name := []string{"lucy_web_fetch", "lucy_read_file", "lucy_list_files"}[n%3]
		r := calls(toolCall(fmt.Sprint("c", n), name, map[string]string{"url": fmt.Sprintf("https://e.example/%d", n)}))
		r.Window = 10000
		return r, nil
	}
	page := strings.Repeat("data ", 790) // ~1k tokens each: R1 has older turns to summarize
	h.tool = func(in activities.ExecuteToolInput) (activities.ToolResult, error) {
		return activities.ToolResult{Content: page, Chars: len(page)}, nil
	}
	h.complete = func(in activities.CompleteInput) (activities.Completion, error) {
		if in.Prompt == "COMPACTOR.md" {
			return activities.Completion{Text: strings.Repeat("summary ", 200), Model: "f"}, nil
		}
		return activities.Completion{Text: "C", Model: "f"}, nil
	}
	res, err := h.runAgent(runInput("crawl everything"))
	if err != nil {
		t.Fatal(err)
	}
	compactions := 0
	for _, c := range h.completes {
		if c.Prompt == "COMPACTOR.md" {
			compactions++
		}
	}
	if compactions < 2 {
		t.Fatalf("compactions = %d, want R1 and R2", compactions)
	}
	deep, asked := false, false
	for _, c := range h.modelCalls {
		for _, e := range c.Transcript.Entries {
			deep = deep || strings.Contains(e.Text, "[deep pruned]")
		}
		asked = asked || c.ToolChoice == "ask_human"
	}
	if !deep {
		t.Error("no deep prune (R2)")
	}
	if !asked {
		t.Error("the ladder never asked the human (R3)")
	}
	if res.Status != RunNeedsInput && res.Status != RunPartial {
		t.Errorf("status %s", res.Status)
	}
	// After a compaction the transcript is re-sent in full (no base), and starts with the prompt,
	// named in the first call's input that carried it (changeLeanStart), not sent again.
	rewritten := false
	for _, c := range h.modelCalls[1:] {
		if c.Transcript.Base == "" {
			rewritten = true
			if e := c.Transcript.Entries[0]; e.Ref != activities.InputRef("model-1") || e.Index != 0 || e.Text != "" {
				t.Errorf("compacted transcript lost the system prompt: %+v", e)
			}
		}
	}
	if !rewritten {
		t.Error("no compacted transcript was sent")
	}
}

func TestSoftLimitSummaryTurn(t *testing.T) {
	h := newHarness(t)
	in := runInput("long task")
	in.SoftLimit = 5 * time.Minute
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if in.ToolChoice == "none" {
			return text("Here is what I did so far."), nil
		}
		return calls(toolCall(fmt.Sprint("c", n), "lucy_web_fetch", map[string]string{"url": fmt.Sprintf("https://e.example/%d", n)})), nil
	}
	// Each tool batch takes 2 minutes of workflow time.
	h.toolMock.After(2 * time.Minute)
	res, err := h.runAgent(in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunPartial || h.answer() != "Here is what I did so far." {
		t.Fatalf("status %s answer %q", res.Status, h.answer())
	}
}

func TestAbsoluteLimitStopsTheRun(t *testing.T) {
	h := newHarness(t)
	in := runInput("endless task")
	in.SoftLimit = 3 * time.Hour
	in.AbsoluteMax = 10 * time.Minute
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		return calls(toolCall(fmt.Sprint("c", n), "lucy_web_fetch", map[string]string{"url": fmt.Sprintf("https://e.example/%d", n)})), nil
	}
	h.toolMock.After(3 * time.Minute)
	res, err := h.runAgent(in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunPartial || res.Reason == "" || h.answer() == "" {
		t.Fatalf("%+v answer %q", res, h.answer())
	}
}

func TestModelOutageWaitsForResume(t *testing.T) {
	for _, action := range []string{ResumeRetry, ResumeSkip, ResumeAbort} {
		t.Run(action, func(t *testing.T) {
			h := newHarness(t)
			failing := true
			h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
				if failing {
					return activities.ModelReply{}, errors.New("connection refused")
				}
				return text("back online"), nil
			}
			h.env.RegisterDelayedCallback(func() {
				failing = false
				h.env.SignalWorkflow(SignalResume, Resume{Action: action})
			}, time.Hour)
			res, err := h.runAgent(runInput("hello there friend, compute"))
			if err != nil {
				t.Fatal(err)
			}
			if len(h.posts) == 0 || !strings.Contains(h.posts[0].Text, "resume") {
				t.Errorf("no notice about resuming: %+v", h.posts)
			}
			want := map[string]string{ResumeRetry: RunCompleted, ResumeSkip: RunPartial, ResumeAbort: RunFailed}[action]
			if res.Status != want {
				t.Errorf("status %s, want %s", res.Status, want)
			}
		})
	}
}

func TestProgressMessages(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n <= 9 {
			return calls(toolCall(fmt.Sprint("c", n), "lucy_web_fetch", map[string]string{"url": fmt.Sprintf("https://e.example/%d", n)})), nil
		}
		return text("done"), nil
	}
	if _, err := h.runAgent(runInput("crawl nine pages")); err != nil {
		t.Fatal(err)
	}
	if len(h.updates) != 2 { // turn 3 and turn 8
		t.Errorf("progress updates = %d (%v), want 2", len(h.updates), h.updates)
	}
	if len(h.updates) == 2 && h.updates[0] == h.updates[1] {
		t.Error("progress wording does not vary")
	}
}

func TestPerToolCapWarnsThenStops(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		// lucy_write_file is not cap-exempt; alternate paths so loop detection sees differing args,
		// interleaved with another tool so pattern thrash (4 of the last 6) stays quiet.
		if n%2 == 1 {
			return calls(toolCall(fmt.Sprint("w", n), "lucy_write_file", map[string]string{"path": fmt.Sprintf("f%d.md", n), "content": "x"})), nil
		}
		return calls(toolCall(fmt.Sprint("r", n), "lucy_read_file", map[string]string{"path": fmt.Sprintf("f%d.md", n)})), nil
	}
	res, err := h.runAgent(runInput("write the files"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunPartial || res.Reason == "" {
		t.Fatalf("status %s reason %q: the cap should stop the run", res.Status, res.Reason)
	}
	writes := 0
	for _, c := range h.toolCalls {
		if c.Name == "lucy_write_file" {
			writes++
		}
	}
	if writes > 12 {
		t.Errorf("%d writes: the cap did not stop the loop", writes)
	}
	if res.Tier == "default" {
		t.Error("the first cap stop should escalate before stopping")
	}
}

func TestCodeToolsEscalateToCodeTier(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(toolCall("c1", "lucy_write_file", map[string]string{"path": "main.go", "content": "package main"})), nil
		}
		return text("Wrote the program."), nil
	}
	if _, err := h.runAgent(runInput("write a go program")); err != nil {
		t.Fatal(err)
	}
	if tiers := h.tiers(); tiers[len(tiers)-1] != "code" {
		t.Errorf("tiers %v, want code after writing source code", tiers)
	}
}

func TestRepeatedFailedEditsEscalateToFrontier(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n <= 2 {
			return calls(toolCall(fmt.Sprint("e", n), "lucy_edit_file", map[string]string{"path": "notes.md", "old": fmt.Sprint("x", n), "new": "y"})), nil
		}
		return text("Edited."), nil
	}
	h.tool = func(in activities.ExecuteToolInput) (activities.ToolResult, error) {
		return activities.ToolResult{Content: "Error: the text to replace was not found", IsError: true}, nil
	}
	if _, err := h.runAgent(runInput("fix the typo")); err != nil {
		t.Fatal(err)
	}
	if tiers := h.tiers(); tiers[len(tiers)-1] != "frontier" {
		t.Errorf("tiers %v, want frontier after two failed edits", tiers)
	}
}

func TestVerificationGate(t *testing.T) {
	h := newHarness(t)
	h.route.Intent = "document"
	h.route.Tier = "frontier" // the quality gate trusts frontier; the verification gate still checks
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return text("Here is a sample of the data."), nil
		}
		return text("Here is the complete export: all 1,204 rows are in the attached CSV, and the summary sheet totals every region for the whole year."), nil
	}
	if _, err := h.runAgent(runInput("export all the rows of the sales table as a CSV and also give me a summary of the totals per region for the whole year please")); err != nil {
		t.Fatal(err)
	}
	if len(h.modelCalls) != 2 {
		t.Fatalf("model calls = %d, want one verification retry", len(h.modelCalls))
	}
	if !h.sawInline(1, "Do the work with the tools") {
		t.Errorf("issues not injected: %v", h.inlineTexts(1))
	}
}

func TestSlackRejectingTheAnswerIsToldInThePlaceholder(t *testing.T) {
	h := newHarness(t)
	h.deliverErr = temporal.NewNonRetryableApplicationError("chat.update: msg_too_long", activities.ErrSlackPermanent, nil)
	_, err := h.runAgent(runInput("write everything"))
	if err == nil {
		t.Fatal("the run should fail visibly")
	}
	if len(h.updates) == 0 || !strings.Contains(h.updates[len(h.updates)-1], "Slack would not accept my answer") {
		t.Errorf("person not told: %v", h.updates)
	}
}
