package workflows

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/activities"
)

// Tests for the changes behind changeLaneHardening and changeRunHardening (issue 7). Each one fails
// on the code before the change.

// A lane that closed after a week idle starts again: its runs must not reuse the old runs' IDs,
// because posts are made idempotent by (run workflow ID, key).
func TestRunIDsStayUniqueWhenALaneStartsAgain(t *testing.T) {
	var ids []string
	for _, ts := range []string{"100.1", "900.5"} {
		h := newHarness(t)
		h.runLane(msg(ts, "U1", "summarize the incident"))
		if len(h.deliveries) != 1 {
			t.Fatalf("deliveries %+v", h.deliveries)
		}
		ids = append(ids, h.deliveries[0].RunID)
	}
	if ids[0] == ids[1] {
		t.Fatalf("the restarted lane reused run ID %s", ids[0])
	}
	if want := RunID(laneKey, 1, "900.5"); ids[1] != want {
		t.Errorf("run ID %q, want %q", ids[1], want)
	}
}

// A resume sent while the run was not waiting (here: while it waited for an approval) must not be
// consumed by a later wait: that would retry a step nobody asked to retry.
func TestStaleResumeIsNotConsumedByALaterWait(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resumeAt  time.Duration // a real resume, while the run waits; 0: none
		wantCalls int
		wantState string
	}{
		{"no resume: the wait times out", 0, 2, RunFailed},
		{"a real resume retries", 2 * time.Hour, 3, RunCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
				switch n {
				case 1:
					return calls(toolCall("d1", "lucy_delete_file", map[string]string{"path": "a.txt"})), nil
				case 2:
					return activities.ModelReply{}, temporal.NewNonRetryableApplicationError("down", "ModelUnavailable", nil)
				}
				return text("done"), nil
			}
			steps := []step{
				signalAt(time.Minute, SignalResume, Resume{Action: ResumeRetry}), // stale: nothing waits for it
				{at: 2 * time.Minute, do: func(h *harness) {
					h.env.SignalWorkflow(SignalApproval, Approval{Fingerprint: h.fp(0), Approved: true, User: "U1", Source: "button", Sig: "signed"})
				}},
			}
			if tc.resumeAt > 0 {
				steps = append(steps, signalAt(tc.resumeAt, SignalResume, Resume{Action: ResumeRetry}))
			}
			for _, s := range steps {
				s := s
				h.env.RegisterDelayedCallback(func() { s.do(h) }, s.at)
			}
			res, err := h.runAgent(runInput("delete a.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if len(h.modelCalls) != tc.wantCalls || res.Status != tc.wantState {
				t.Fatalf("model calls %d, status %s; want %d, %s", len(h.modelCalls), res.Status, tc.wantCalls, tc.wantState)
			}
		})
	}
}

// While a run waits for a person, the time limits must not wake it every minute: a 24-hour wait
// would write about 1,400 timers into history.
func TestPausedRunSchedulesNoTimerPerMinute(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		return activities.ModelReply{}, temporal.NewNonRetryableApplicationError("down", "ModelUnavailable", nil)
	}
	timers := 0
	h.env.SetOnTimerScheduledListener(func(string, time.Duration) { timers++ })
	in := runInput("what changed?")
	in.SoftLimit, in.AbsoluteMax = time.Minute, 2*time.Minute // both expire during the 24-hour wait
	res, err := h.runAgent(in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunFailed {
		t.Fatalf("status %s", res.Status)
	}
	if timers > 10 {
		t.Fatalf("%d timers scheduled during one wait for a person", timers)
	}
}

// An error before the loop (here: loading the thread) must not leave "Thinking…" in the thread.
func TestFailureBeforeTheLoopReplacesThePlaceholder(t *testing.T) {
	h := newHarness(t)
	h.threadErr = temporal.NewNonRetryableApplicationError("load thread: not_in_channel: invite Lucy to the channel", "SlackPermanent", nil)
	_, err := h.runAgent(runInput("hello there"))
	if err == nil {
		t.Fatal("the run should fail, visibly")
	}
	if len(h.updates) != 1 || !strings.Contains(h.updates[0], "something went wrong") || !strings.Contains(h.updates[0], "invite Lucy") {
		t.Fatalf("placeholder updates %q", h.updates)
	}
}

// "cancel that" while a side-effecting tool runs is tested end to end (e2e TestCancelWaitsForToolInFlight):
// the SDK's test environment resolves a cancelled activity at once, whatever WaitForCancellation says.

// An approval the gateway did not sign (a signal sent by hand) changes nothing and tells nobody; a
// signed one from the requester goes through.
func TestUnsignedApprovalIsRefused(t *testing.T) {
	h := newHarness(t)
	approvalScript(h)
	h.runLane(msg("100.1", "U1", "delete the old report csv"),
		step{at: time.Minute, do: func(h *harness) {
			h.env.SignalWorkflow(SignalApproval, Approval{Fingerprint: h.fp(0), Approved: true, User: "U1", Source: "button"})
		}},
		signalAt(90*time.Second, SignalMessage, Message{EventID: "Ev9", Team: "T1", Channel: "C1", TS: "100.9", ThreadTS: "100.1", User: "U1", Text: "yes, do it", Kind: "message"}),
		step{at: 2 * time.Minute, do: func(h *harness) {
			if len(h.toolCalls) != 0 {
				h.t.Errorf("an unsigned approval ran the tool")
			}
			h.env.SignalWorkflow(SignalApproval, Approval{Fingerprint: h.fp(0), Approved: true, User: "U1", Source: "button", Sig: "signed"})
		}})
	if len(h.toolCalls) != 1 {
		t.Fatalf("tool calls %+v", h.toolCalls)
	}
	if len(h.ephemerals) != 0 {
		t.Errorf("someone was told about a forged approval: %+v", h.ephemerals)
	}
	if len(h.checks) != 3 || h.checks[1].Source != "message" || h.checks[1].MessageTS != "100.9" || h.checks[1].Text != "yes, do it" {
		t.Errorf("checks %+v", h.checks)
	}
}

// Flags recorded in the run's Route decide, not the catalogue compiled into the worker; a tool the
// run was not given is refused.
func TestRecordedToolFlagsDecide(t *testing.T) {
	h := newHarness(t)
	h.route.Specs = []activities.ToolFlags{{Name: "lucy_write_file", Destructive: true}, {Name: "ask_human", Builtin: true}}
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(
				toolCall("w1", "lucy_write_file", map[string]string{"path": "a.md", "content": "x"}),
				toolCall("f1", "lucy_web_fetch", map[string]string{"url": "https://example.com"}),
			), nil
		}
		return text("done"), nil
	}
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(SignalApproval, Approval{Fingerprint: h.fp(0), Approved: true, User: "U1", Source: "button", Sig: "signed"})
	}, time.Minute)
	if _, err := h.runAgent(runInput("write a.md")); err != nil {
		t.Fatal(err)
	}
	if len(h.prompts) != 1 {
		t.Fatalf("a tool recorded as destructive was not approved first: prompts %+v", h.prompts)
	}
	if len(h.toolCalls) != 1 || h.toolCalls[0].Name != "lucy_write_file" {
		t.Fatalf("tool calls %+v", h.toolCalls)
	}
	if !h.sawInline(1, "there is no tool named lucy_web_fetch") {
		t.Errorf("model not told: %q", h.inlineTexts(1))
	}
}

// At most Route.MaxToolCalls calls of one reply run; the others get a result the model can act on.
// Oversize arguments get an error instead of a tool run.
func TestToolCallLimitAndOversizeArguments(t *testing.T) {
	h := newHarness(t)
	h.route.MaxToolCalls = 2
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			big := toolCall("w1", "lucy_write_file", map[string]string{})
			big.Oversize = 3 << 20
			return calls(
				big,
				toolCall("t1", "lucy_current_time", map[string]string{}),
				toolCall("t2", "lucy_current_time", map[string]string{}),
				toolCall("t3", "lucy_current_time", map[string]string{}),
			), nil
		}
		return text("done"), nil
	}
	if _, err := h.runAgent(runInput("what time is it?")); err != nil {
		t.Fatal(err)
	}
	if len(h.toolCalls) != 1 || h.toolCalls[0].CallID != "t1" {
		t.Fatalf("tool calls %+v", h.toolCalls)
	}
	for _, want := range []string{"too large to handle (3.0 MB)", "only 2 tool calls of one reply are run, and this was call 3", "this was call 4"} {
		if !h.sawInline(1, want) {
			t.Errorf("model not told %q: %q", want, h.inlineTexts(1))
		}
	}
}

// A tool that finds a call would destroy something (overwrite a file) does nothing and asks; once
// approved, the run calls it again with Approved set.
func TestToolAskedApproval(t *testing.T) {
	h := newHarness(t)
	h.tool = func(in activities.ExecuteToolInput) (activities.ToolResult, error) {
		if !in.Approved {
			return activities.ToolResult{Content: "No change made: needs approval.", NeedsApproval: &activities.ApprovalNeed{
				Summary: "I'd like to overwrite `a.md`", Details: "old: 3 lines, new: 1 line", Guard: "g1",
			}}, nil
		}
		return activities.ToolResult{Content: "Wrote a.md", Chars: 10}, nil
	}
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(toolCall("w1", "lucy_write_file", map[string]string{"path": "a.md", "content": "new"})), nil
		}
		return text("done"), nil
	}
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(SignalApproval, Approval{Fingerprint: h.fp(0), Approved: true, User: "U1", Source: "button", Sig: "signed"})
	}, time.Minute)
	if _, err := h.runAgent(runInput("rewrite a.md")); err != nil {
		t.Fatal(err)
	}
	if len(h.prompts) != 1 || h.prompts[0].Summary != "I'd like to overwrite `a.md`" || h.prompts[0].Details != "old: 3 lines, new: 1 line" {
		t.Fatalf("prompts %+v", h.prompts)
	}
	if len(h.toolCalls) != 2 || h.toolCalls[0].Approved || !h.toolCalls[1].Approved || h.toolCalls[1].Guard != "g1" {
		t.Fatalf("tool calls %+v", h.toolCalls)
	}
	if got := h.modelCalls[1].Transcript.Entries; len(got) == 0 || got[len(got)-1].Ref == "" {
		t.Errorf("the model should read the approved call's result by reference: %+v", got)
	}
}

// Big arguments (a whole file) are passed to the tool by reference to the model's reply.
func TestBigToolArgumentsGoByReference(t *testing.T) {
	h := newHarness(t)
	content := strings.Repeat("line of the report\n", 400)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(toolCall("w1", "lucy_write_file", map[string]string{"path": "r.md", "content": content}),
				toolCall("t1", "lucy_current_time", map[string]string{})), nil
		}
		return text("done"), nil
	}
	if _, err := h.runAgent(runInput("write the report")); err != nil {
		t.Fatal(err)
	}
	if len(h.toolCalls) != 2 {
		t.Fatalf("tool calls %+v", h.toolCalls)
	}
	w, tm := h.toolCalls[0], h.toolCalls[1]
	if w.Name != "lucy_write_file" {
		w, tm = tm, w
	}
	if w.Arguments != "" || !strings.HasPrefix(w.ArgsRef, "model-") {
		t.Errorf("big arguments copied into the tool's input: ref %q, %d bytes", w.ArgsRef, len(w.Arguments))
	}
	if tm.ArgsRef != "" || tm.Arguments == "" {
		t.Errorf("small arguments should stay inline: %+v", tm)
	}
}

// A failure that is not the provider being unreachable is named for what it is, and "retry" does not
// loop on it: when the same error comes back after a retry, the run ends instead of pausing again.
func TestModelFailureKindsAndBoundedRetry(t *testing.T) {
	for _, tc := range []struct {
		name, errType, says string
	}{
		{"configuration", activities.ErrConfig, "Something went wrong on my side (no model configured for tier"},
		{"missing reference", activities.ErrTranscriptRef, "Something went wrong on my side (transcript reference"},
		{"provider rejected the key", activities.ErrModelPermanent, "The language model provider rejected my request (HTTP 401"},
		{"HTTP 400 at the frontier tier", activities.ErrModelBadRequest, "The language model provider rejected my request (HTTP 400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			msgs := map[string]string{
				activities.ErrConfig:          `no model configured for tier "default" (set LUCY_MODEL_DEFAULT)`,
				activities.ErrTranscriptRef:   `transcript reference "tool-3" is not a completed activity of this run`,
				activities.ErrModelPermanent:  "model call failed: HTTP 401: invalid key (check OPENAI_API_KEY)",
				activities.ErrModelBadRequest: "model call failed: HTTP 400: invalid tool_choice",
			}
			h.route.Tier = "frontier" // a 400 below it escalates first
			h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
				return activities.ModelReply{}, temporal.NewNonRetryableApplicationError(msgs[tc.errType], tc.errType, nil)
			}
			h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(SignalResume, Resume{Action: ResumeRetry}) }, time.Hour)
			res, err := h.runAgent(runInput("what changed?"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != RunFailed || len(h.modelCalls) != 2 {
				t.Fatalf("status %s after %d model calls; want failed after 2 (one retry)", res.Status, len(h.modelCalls))
			}
			var waits []string
			for _, p := range h.posts {
				waits = append(waits, p.Text)
			}
			if len(waits) != 1 || !strings.HasPrefix(waits[0], tc.says) || strings.Contains(waits[0], "couldn't reach") {
				t.Fatalf("pause messages %q", waits)
			}
			if h.sawInline(1, "Previous attempt failed") {
				t.Errorf("the model was told about a failure that was not its provider's")
			}
		})
	}
}

// Queued messages are carried into continue-as-new: their text is bounded well under the 2 MiB
// payload limit, the rest get the "busy" reply.
func TestQueuedTextIsBounded(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 { // the first run is busy while all the others arrive
			time.Sleep(500 * time.Millisecond)
		}
		return text("done"), nil
	}
	long := strings.Repeat("x", 39_000)
	var steps []step
	for i := 0; i < 12; i++ {
		steps = append(steps, signalAt(time.Millisecond, SignalMessage, msg(fmt.Sprintf("101.%d", i), "U2", long)))
	}
	h.runLane(msg("100.1", "U1", "summarize the incident"), steps...)
	busy := 0
	for _, p := range h.posts {
		if strings.HasPrefix(p.Key, "busy-") {
			busy++
		}
	}
	if want := 12 - MaxQueuedChars/39_000; busy != want {
		t.Errorf("%d busy replies, want %d", busy, want)
	}
}

// The empty-reply ladder counts empty replies in a row: an empty reply now and then in a long
// run neither escalates nor ends it.
func TestEmptyRepliesCountOnlyInARow(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		switch n {
		case 1, 3, 5:
			return activities.ModelReply{Model: "m"}, nil // empty
		case 7:
			return text("All done."), nil
		}
		return calls(toolCall(fmt.Sprint("t", n), "lucy_current_time", map[string]string{})), nil
	}
	res, err := h.runAgent(runInput("check the time a few times"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunCompleted || h.answer() != "All done." {
		t.Fatalf("status %s, answer %q", res.Status, h.answer())
	}
	for i, tier := range h.tiers() {
		if tier != "default" {
			t.Fatalf("call %d escalated to %s on a single empty reply", i+1, tier)
		}
	}
}

// Three tool errors in a row inject an intervention and escalate the model at once.
func TestStuckDetectionEscalatesOnFirstFiring(t *testing.T) {
	h := newHarness(t)
	h.tool = func(in activities.ExecuteToolInput) (activities.ToolResult, error) {
		return activities.ToolResult{Content: "Error: the page is gone", IsError: true}, nil
	}
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n <= 3 {
			return calls(toolCall(fmt.Sprint("f", n), "lucy_web_fetch", map[string]string{"url": fmt.Sprintf("https://example.com/%d", n)})), nil
		}
		return text("I could not read those pages."), nil
	}
	if _, err := h.runAgent(runInput("read those pages")); err != nil {
		t.Fatal(err)
	}
	tiers := h.tiers()
	if len(tiers) < 4 || tiers[3] == "default" {
		t.Fatalf("tiers %v: the call after the third error in a row should be escalated", tiers)
	}
	if !h.sawInline(3, "seem stuck") {
		t.Errorf("no intervention: %q", h.inlineTexts(3))
	}
}

// A tool that reaches its per-tool cap is withdrawn from the tools offered; another tool reaching its
// own cap later does not end the run (the cap counts per tool).
func TestCappedToolIsWithdrawn(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		switch {
		case n <= 6:
			return calls(
				toolCall(fmt.Sprint("w", n), "lucy_write_file", map[string]string{"path": fmt.Sprintf("part%d.md", n), "content": "x"}),
				toolCall(fmt.Sprint("t", n), "lucy_current_time", map[string]string{}),
				toolCall(fmt.Sprint("l", n), "lucy_list_files", map[string]string{}),
			), nil
		case n == 7:
			return calls(toolCall("w7", "lucy_write_file", map[string]string{"path": "part7.md", "content": "x"})), nil
		}
		return text("Wrote the parts."), nil
	}
	res, err := h.runAgent(runInput("write the report in parts"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunCompleted {
		t.Fatalf("status %s (%s): a second cap stop ended the run", res.Status, res.Reason)
	}
	writes := 0
	for _, c := range h.toolCalls {
		if c.Name == "lucy_write_file" {
			writes++
		}
	}
	if writes != 6 {
		t.Errorf("%d writes, want 6 (the cap)", writes)
	}
	for _, name := range h.modelCalls[6].Tools {
		if name == "lucy_write_file" {
			t.Errorf("lucy_write_file still offered after its cap: %v", h.modelCalls[6].Tools)
		}
	}
	if !h.sawInline(7, "lucy_write_file reached its limit for this request") {
		t.Errorf("the model was not told: %q", h.inlineTexts(7))
	}
}

// "also …" from the requester that arrives during the run's last model call is not lost: the run
// hands it back unread and the lane runs it next.
func TestFoldAfterTheLastReadRunsNext(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 { // the fold arrives while this, the run's last model call, is in flight
			h.env.SignalWorkflow(SignalMessage, msg("100.2", "U1", "also include the timeline"))
			time.Sleep(200 * time.Millisecond)
		}
		return text(fmt.Sprintf("answer %d", n)), nil
	}
	h.runLane(msg("100.1", "U1", "summarize the incident"))
	if len(h.deliveries) != 2 {
		t.Fatalf("%d answers, want 2: the fold was lost", len(h.deliveries))
	}
	if !strings.HasSuffix(h.deliveries[1].RunID, ":100.2") {
		t.Errorf("second run %s should be the folded message's", h.deliveries[1].RunID)
	}
}

// A question pauses the run instead of ending it (issue 8): the rest of the batch runs first, the
// placeholder becomes the question, the lane routes the requester's reply (not someone else's) to
// the run, and the loop goes on with everything it had.
func TestQuestionPausesTheRun(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		switch n {
		case 1:
			return calls(
				toolCall("a1", "ask_human", map[string]string{"question": "Which quarter?"}),
				toolCall("t1", "lucy_current_time", map[string]string{}),
				toolCall("a2", "ask_human", map[string]string{"question": "And which region?"}),
			), nil
		case 2:
			return text("Here is the Q3 report."), nil
		}
		return text("second request done"), nil
	}
	h.runLane(msg("100.1", "U1", "make the report"),
		signalAt(time.Hour, SignalMessage, msg("100.5", "U2", "what's for lunch?")), // not the requester: queued
		signalAt(2*time.Hour, SignalMessage, msg("100.6", "U1", "Q3")))
	if len(h.toolCalls) != 1 || h.toolCalls[0].Name != "lucy_current_time" {
		t.Fatalf("tool calls %+v: the rest of the batch must run", h.toolCalls)
	}
	if len(h.deliveries) < 2 || h.deliveries[0].Markdown != "Which quarter?" || h.deliveries[1].Markdown != "Here is the Q3 report." {
		t.Fatalf("deliveries %+v", h.deliveries)
	}
	for _, want := range []string{"tool: The person answered: Q3", "tool: Not asked: ask one question at a time"} {
		if !h.sawInline(1, want) {
			t.Errorf("second model call lacks %q: %q", want, h.inlineTexts(1))
		}
	}
	timeResult := false
	for _, e := range h.modelCalls[1].Transcript.Entries {
		timeResult = timeResult || (e.ToolCallID == "t1" && e.Ref != "")
	}
	if !timeResult {
		t.Errorf("the other tool's result is missing: %+v", h.modelCalls[1].Transcript.Entries)
	}
	if len(h.deliveries) != 3 || h.deliveries[2].Markdown != "second request done" || !strings.HasSuffix(h.deliveries[2].RunID, ":100.5") {
		t.Errorf("the other person's message should run after: %+v", h.deliveries)
	}
}

// A reply that opens a new request ends the waiting run with what it has; the reply runs next. No
// reply within QuestionTTL ends it the same way.
func TestUnansweredQuestionEndsCleanly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		steps  []step
		wantTo string
		runs   int
	}{
		{"new request", []step{signalAt(time.Hour, SignalMessage, msg("100.6", "U1", "new question: who is on call?"))}, "new request", 2},
		{"no reply", nil, "no answer to my question", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
				if n == 1 {
					return calls(toolCall("t1", "lucy_current_time", map[string]string{}),
						toolCall("a1", "ask_human", map[string]string{"question": "Which quarter?"})), nil
				}
				return text("Bob is on call."), nil
			}
			h.runLane(msg("100.1", "U1", "make the report"), tc.steps...)
			if len(h.deliveries) != tc.runs+1 {
				t.Fatalf("deliveries %+v", h.deliveries)
			}
			if d := h.deliveries[1].Markdown; !strings.Contains(d, tc.wantTo) {
				t.Errorf("the first run ended with %q, want it to say %q", d, tc.wantTo)
			}
			if tc.runs == 2 && h.deliveries[2].Markdown != "Bob is on call." {
				t.Errorf("the new request did not run next: %+v", h.deliveries[2])
			}
		})
	}
}

// Four page fetches in parallel are one step of research, not thrash (issue 8).
func TestParallelFetchesAreNotThrash(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			var cs []activities.ToolCall
			for i := 0; i < 4; i++ {
				cs = append(cs, toolCall(fmt.Sprint("f", i), "lucy_web_fetch", map[string]string{"url": fmt.Sprintf("https://example.com/%d", i)}))
			}
			return calls(cs...), nil
		}
		return text("Read all four."), nil
	}
	if _, err := h.runAgent(runInput("read these four pages")); err != nil {
		t.Fatal(err)
	}
	if h.sawInline(1, "You have called lucy_web_fetch") {
		t.Errorf("loop detection fired on one parallel batch: %q", h.inlineTexts(1))
	}
}

// Routing knows how deep the thread is (issue 8): the run reads the thread before it routes.
func TestRoutingGetsTheThreadDepth(t *testing.T) {
	h := newHarness(t)
	h.thread = activities.ThreadHistory{Messages: []activities.ThreadMessage{
		{Role: "user", User: "U1", Text: "what were Q3 sales?", TS: "100.1"},
		{Role: "assistant", User: "ULUCY", Text: "Q3 sales were 4.2M.", TS: "100.2"},
		{Role: "user", User: "U1", Text: "and Q2?", TS: "100.3"},
		{Role: "assistant", User: "ULUCY", Text: "Q2 sales were 3.9M.", TS: "100.4"},
		{Role: "user", User: "U1", Text: "and Q4?", TS: "100.5"},
	}}
	in := runInput("and Q4?")
	in.Message.TS = "100.5"
	if _, err := h.runAgent(in); err != nil {
		t.Fatal(err)
	}
	// (Routing is a local activity since fast-start; the test environment may call a local
	// activity's mock more than once for one execution, so every call must carry the depth.)
	if len(h.routes) == 0 {
		t.Fatal("never routed")
	}
	for _, r := range h.routes {
		if r.ThreadDepth != 4 {
			t.Fatalf("route inputs %+v, want ThreadDepth 4", h.routes)
		}
	}
}

// HTTP 400 because the transcript is over the model's window compacts and calls again, without
// escalating; a malformed request is reported as Lucy's bug, never escalated (issue 8).
func TestContextLength400CompactsAndMalformed400IsABug(t *testing.T) {
	long := func(h *harness) {
		var ms []activities.ThreadMessage
		for i := 0; i < 30; i++ {
			ms = append(ms, activities.ThreadMessage{Role: "user", User: "U1", Text: strings.Repeat("earlier talk ", 50), TS: fmt.Sprintf("99.%d", i)})
		}
		h.thread = activities.ThreadHistory{Messages: ms}
	}
	t.Run("context length", func(t *testing.T) {
		h := newHarness(t)
		long(h)
		h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
			if n == 1 {
				return activities.ModelReply{}, temporal.NewNonRetryableApplicationError("model call failed: HTTP 400: maximum context length", activities.ErrModelContextLength, nil)
			}
			return text("Summary of the thread."), nil
		}
		res, err := h.runAgent(runInput("summarize this thread"))
		if err != nil {
			t.Fatal(err)
		}
		compactions := 0
		for _, c := range h.completes {
			if c.Prompt == "COMPACTOR.md" {
				compactions++
			}
		}
		if res.Status != RunCompleted || compactions != 1 || res.Tier != "default" {
			t.Fatalf("status %s, %d compactions, tier %s; want completed after one compaction, not escalated", res.Status, compactions, res.Tier)
		}
	})
	t.Run("malformed request", func(t *testing.T) {
		h := newHarness(t)
		h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
			return activities.ModelReply{}, temporal.NewNonRetryableApplicationError("model call failed: HTTP 400: Invalid value for 'tool_choice'", activities.ErrModelMalformed, nil)
		}
		res, err := h.runAgent(runInput("hello"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Tier != "default" || len(h.modelCalls) != 1 {
			t.Errorf("tier %s after %d calls: a malformed request must not escalate", res.Tier, len(h.modelCalls))
		}
		if len(h.posts) != 1 || !strings.HasPrefix(h.posts[0].Text, "Something went wrong on my side (HTTP 400") {
			t.Errorf("pause message %q", h.posts)
		}
	})
}

// The quality gate's remedy is one rewrite on the frontier model without tools, not a
// second loop; when the rewrite fails, the person gets the first answer (issue 8).
func TestQualityGateIsOneRewrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rewrite func() (activities.ModelReply, error)
		want    string
	}{
		{"rewrite", func() (activities.ModelReply, error) {
			return text("Acme charges per seat, Globex per workspace and Initech a flat fee; ours is per seat but 20% above Acme, so the first change should be our enterprise seat price."), nil
		}, "Acme charges per seat"},
		{"rewrite fails", func() (activities.ModelReply, error) {
			return activities.ModelReply{}, temporal.NewNonRetryableApplicationError("down", activities.ErrModelUnavailable, nil)
		}, "I can't find it."},
		{"rewrite calls a tool anyway", func() (activities.ModelReply, error) {
			return calls(toolCall("x", "lucy_web_fetch", map[string]string{"url": "https://e.example"})), nil
		}, "I can't find it."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.route.Intent = "research"
			h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
				if n == 1 {
					return text("I can't find it."), nil
				}
				return tc.rewrite()
			}
			// The quality gate fails on this answer (it can't find it; too short for a complex
			// request), the verification gate does not.
			res, err := h.runAgent(runInput("research how our three main competitors price their enterprise plans, compare them with ours, and recommend what we should change first and why"))
			if err != nil {
				t.Fatal(err)
			}
			if len(h.modelCalls) != 2 || h.modelCalls[1].Tier != "frontier" || h.modelCalls[1].ToolChoice != "none" {
				t.Fatalf("%d model calls, second %+v: want one frontier rewrite without tools", len(h.modelCalls), h.modelCalls[len(h.modelCalls)-1])
			}
			if res.Status != RunCompleted || !strings.Contains(h.answer(), tc.want) {
				t.Errorf("status %s answer %q, want %q", res.Status, h.answer(), tc.want)
			}
			if len(h.toolCalls) != 0 {
				t.Errorf("a rewrite ran tools: %+v", h.toolCalls)
			}
		})
	}
}

// Supervisor (issue 8): INTERVENE is system guidance and never empty; REPLAN tells the planner why
// and what was done; the judge sees the model in use and the length of the answer so far.
func TestSupervisorGuidanceAndReplanContext(t *testing.T) {
	run := func(t *testing.T, verdict string) *harness {
		h := newHarness(t)
		h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
			if n <= 4 {
				r := calls(toolCall(fmt.Sprint("c", n), "lucy_web_fetch", map[string]string{"url": fmt.Sprintf("https://e.example/%d", n)}))
				r.Content, r.Model = "Looking at page "+fmt.Sprint(n), "gpt-test"
				return r, nil
			}
			return text("Here is the full result with everything you asked for, checked and complete."), nil
		}
		h.complete = func(in activities.CompleteInput) (activities.Completion, error) {
			if in.Prompt == "SUPERVISOR.md" {
				return activities.Completion{Text: verdict, Model: "m-fast"}, nil
			}
			return activities.Completion{Text: "GOAL: read\n1. fetch [tool: lucy_web_fetch]\n2. answer\nSUCCESS: answered", Model: "m-fast"}, nil
		}
		if _, err := h.runAgent(runInput("look this up")); err != nil {
			t.Fatal(err)
		}
		return h
	}
	t.Run("intervene", func(t *testing.T) {
		h := run(t, "I: try the archive page instead")
		found := false
		for i := range h.modelCalls {
			found = found || h.sawInline(i, "system: Supervisor guidance: try the archive page instead")
		}
		if !found {
			t.Error("guidance not injected as a system message")
		}
		var sup string
		for _, c := range h.completes {
			if c.Prompt == "SUPERVISOR.md" {
				sup = c.Inline
			}
		}
		if !strings.Contains(sup, "Model: default (gpt-test)") || !strings.Contains(sup, "Response written so far: 17 characters") {
			t.Errorf("the supervisor does not see the model or the response length:\n%s", sup)
		}
	})
	t.Run("empty intervene", func(t *testing.T) {
		h := run(t, "I")
		for i := range h.modelCalls {
			if h.sawInline(i, "Supervisor guidance") {
				t.Fatalf("empty guidance injected: %q", h.inlineTexts(i))
			}
		}
	})
	t.Run("replan", func(t *testing.T) {
		h := run(t, "R: the site moved, search the docs first")
		var replan string
		for _, c := range h.completes {
			if c.Prompt == "PLANNER.md" {
				replan = c.Inline
			}
		}
		if !strings.Contains(replan, "the site moved, search the docs first") || !strings.Contains(replan, "Progress so far:") || !strings.Contains(replan, "lucy_web_fetch (ok)") {
			t.Errorf("the planner was not told why and what was done:\n%s", replan)
		}
	})
}

// The run journal carries over (issue 8): the thread's next run starts knowing what the
// previous one found and decided.
func TestJournalCarriesOverToTheNextRun(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		switch n {
		case 1:
			return calls(toolCall("j1", "append_run_journal_entry", map[string]string{"section": "decisions", "entry": "Use the EU region for every report"})), nil
		case 2:
			return text("Report drafted for the EU region."), nil
		}
		return text("Updated."), nil
	}
	h.runLane(msg("100.1", "U1", "draft the quarterly report"),
		signalAt(time.Hour, SignalMessage, msg("100.7", "U1", "<@ULUCY> now add the March numbers")))
	if len(h.modelCalls) != 3 {
		t.Fatalf("%d model calls", len(h.modelCalls))
	}
	if !h.sawInline(2, "Use the EU region for every report") || !h.sawInline(2, "<previous_run_journal>") {
		t.Errorf("the second run does not see the first run's journal: %q", h.inlineTexts(2))
	}
	if h.sawInline(0, "<previous_run_journal>") {
		t.Error("the first run of a thread has no previous journal")
	}
}

// A long file read reaches the model word for word (an edit needs the exact text); other long
// results are still summarized (issue 8).
func TestExactTextIsNotSummarized(t *testing.T) {
	h := newHarness(t)
	h.tool = func(in activities.ExecuteToolInput) (activities.ToolResult, error) {
		return activities.ToolResult{Content: strings.Repeat("line of text\n", 1000), Chars: 13000}, nil
	}
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(toolCall("r1", "lucy_read_file", map[string]string{"path": "notes.md"}),
				toolCall("h1", "lucy_get_channel_history", map[string]string{"channel": "C1"})), nil
		}
		return text("done"), nil
	}
	h.route.Tools = append(h.route.Tools, "lucy_get_channel_history")
	if _, err := h.runAgent(runInput("fix the typo in notes.md")); err != nil {
		t.Fatal(err)
	}
	summaries := 0
	for _, c := range h.completes {
		if c.Prompt == "SUMMARIZER.md" {
			summaries++
			if strings.Contains(c.Inline, "lucy_read_file") {
				t.Error("the file read was summarized")
			}
		}
	}
	if summaries != 1 {
		t.Errorf("%d summaries, want 1 (the channel history)", summaries)
	}
}

// Compaction sends the earlier conversation once, by reference and capped for the cheap model, not
// a second copy inline (issue 8).
func TestCompactionSendsItsInputOnce(t *testing.T) {
	h := newHarness(t)
	var ms []activities.ThreadMessage
	for i := 0; i < 30; i++ {
		ms = append(ms, activities.ThreadMessage{Role: "user", User: "U1", Text: strings.Repeat("earlier talk ", 50), TS: fmt.Sprintf("99.%d", i)})
	}
	h.thread = activities.ThreadHistory{Messages: ms}
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return activities.ModelReply{}, temporal.NewNonRetryableApplicationError("model call failed: HTTP 400: maximum context length", activities.ErrModelContextLength, nil)
		}
		return text("done"), nil
	}
	if _, err := h.runAgent(runInput("summarize this thread")); err != nil {
		t.Fatal(err)
	}
	var comp *activities.CompleteInput
	for i, c := range h.completes {
		if c.Prompt == "COMPACTOR.md" {
			comp = &h.completes[i]
		}
	}
	if comp == nil {
		t.Fatal("no compaction")
	}
	if strings.Contains(comp.Inline, "earlier talk") || len(comp.Document.Entries) == 0 || comp.DocumentMaxChars == 0 {
		t.Errorf("inline %d chars (with the messages: %v), %d document entries, cap %d", len(comp.Inline),
			strings.Contains(comp.Inline, "earlier talk"), len(comp.Document.Entries), comp.DocumentMaxChars)
	}
}

// On a 128k window, compaction (at 70%) fires before the payload trim drops anything: the trim is the
// safety net, not the policy (issue 8).
func TestCompactionFiresBeforeThePayloadTrimOnALongRun(t *testing.T) {
	h := newHarness(t)
	page := strings.Repeat("A line of the long document, with words that count as tokens. ", 250) // ~16k chars
	h.tool = func(in activities.ExecuteToolInput) (activities.ToolResult, error) {
		return activities.ToolResult{Content: page, Chars: len(page)}, nil
	}
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n > 30 {
			return text("Read everything."), nil
		}
		if n%2 == 0 {
			return calls(toolCall(fmt.Sprint("f", n), "lucy_web_fetch", map[string]string{"url": fmt.Sprintf("https://docs.example/%d", n)})), nil
		}
		return calls(toolCall(fmt.Sprint("r", n), "lucy_read_file", map[string]string{"path": fmt.Sprintf("part%d.md", n)})), nil
	}
	if _, err := h.runAgent(runInput("read the whole manual, part by part")); err != nil {
		t.Fatal(err)
	}
	compactedAt, trimmedAt := 0, 0
	for i := range h.modelCalls {
		if compactedAt == 0 && strings.Contains(fmt.Sprint(h.modelCalls[i].Transcript.Entries), "[Summary of earlier work in this run]") {
			compactedAt = i + 1
		}
		if trimmedAt == 0 && h.sawInline(i, "dropped to save space") {
			trimmedAt = i + 1
		}
	}
	if compactedAt == 0 || (trimmedAt != 0 && trimmedAt < compactedAt) {
		t.Fatalf("compaction at call %d, trim at call %d: compaction must come first", compactedAt, trimmedAt)
	}
}

// A tool that keeps failing for a reason of the system parks the run the way a failing model does:
// the first failure goes to the model, the second in a row of the same tool waits for `resume`.
// retry runs the call again, skip goes on without it, abort ends the run.
func TestAToolThatKeepsFailingParksTheRun(t *testing.T) {
	for _, action := range []string{ResumeRetry, ResumeSkip, ResumeAbort} {
		t.Run(action, func(t *testing.T) {
			h := newHarness(t)
			down := true
			h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
				if n <= 2 {
					return calls(toolCall(fmt.Sprint("c", n), "lucy_web_fetch", map[string]string{"url": fmt.Sprintf("https://e.example/%d", n)})), nil
				}
				return text("Here is the page."), nil
			}
			h.tool = func(in activities.ExecuteToolInput) (activities.ToolResult, error) {
				if down {
					return activities.ToolResult{}, temporal.NewApplicationError("fetch e.example: 503 Service Unavailable", activities.ErrToolTransient)
				}
				return activities.ToolResult{Content: "the page", Chars: 8}, nil
			}
			h.env.RegisterDelayedCallback(func() {
				down = false
				h.env.SignalWorkflow(SignalResume, Resume{Action: action})
			}, time.Hour)
			res, err := h.runAgent(runInput("read the page at e.example please"))
			if err != nil {
				t.Fatal(err)
			}
			var notice string
			for _, p := range h.posts {
				if strings.Contains(p.Text, "keeps failing") {
					notice = p.Text
				}
			}
			if !strings.Contains(notice, "twice") || !strings.Contains(notice, "503") || !strings.Contains(notice, "retry") {
				t.Errorf("parked notice %q, want it to say the tool failed twice, why, and how to resume (posts %+v)", notice, h.posts)
			}
			want := map[string]string{ResumeRetry: RunCompleted, ResumeSkip: RunCompleted, ResumeAbort: RunFailed}[action]
			if res.Status != want {
				t.Errorf("status %s (%s), want %s", res.Status, res.Reason, want)
			}
			// The first failure went to the model as an error, without parking.
			if !h.sawInline(1, "503") {
				t.Errorf("the model did not read the first failure: %v", h.inlineTexts(1))
			}
			switch action {
			case ResumeRetry: // the call ran again and its result reached the model
				if n := len(h.modelCalls); n != 3 {
					t.Errorf("%d model calls, want 3", n)
				}
			case ResumeSkip:
				if !h.sawInline(2, "skip this step") {
					t.Errorf("the model was not told the step was skipped: %v", h.inlineTexts(2))
				}
			case ResumeAbort:
				if n := len(h.modelCalls); n != 2 {
					t.Errorf("%d model calls after abort, want 2 (no more turns)", n)
				}
			}
		})
	}
}

// A tool's own answer ("no such file", ErrToolFailed) and a bad call are the model's to handle,
// however often they happen: they never park the run.
func TestToolErrorsOfTheToolsOwnDoNotPark(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n <= 3 {
			return calls(toolCall(fmt.Sprint("c", n), "lucy_read_file", map[string]string{"path": fmt.Sprintf("missing%d.md", n)})), nil
		}
		return text("None of those files exist."), nil
	}
	h.tool = func(in activities.ExecuteToolInput) (activities.ToolResult, error) {
		return activities.ToolResult{}, temporal.NewNonRetryableApplicationError("no such file", activities.ErrToolFailed, nil)
	}
	res, err := h.runAgent(runInput("read my three files"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range h.posts {
		if strings.Contains(p.Text, "keeps failing") {
			t.Errorf("parked on the tool's own error: %q", p.Text)
		}
	}
	if res.Status != RunCompleted {
		t.Errorf("status %s (%s)", res.Status, res.Reason)
	}
}

// An answer Slack refuses for a reason an operator fixes (a revoked token, Lucy removed from the
// channel) is kept: the run waits for `resume`, and retry posts it once the cause is fixed. A refusal
// that is a bug (msg_too_long) is not waited on: the run fails visibly.
func TestAnAnswerSlackRefusesWaitsForTheFix(t *testing.T) {
	for _, code := range []string{"invalid_auth", "not_in_channel"} {
		t.Run(code, func(t *testing.T) {
			h := newHarness(t)
			h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
				return text("The plan has three phases."), nil
			}
			h.deliverErr = temporal.NewNonRetryableApplicationError("chat.update: "+code+": fix it", activities.ErrSlackPermanent, nil, code)
			h.env.RegisterDelayedCallback(func() {
				h.mu.Lock()
				h.deliverErr = nil
				h.mu.Unlock()
				h.env.SignalWorkflow(SignalResume, Resume{Action: ResumeRetry})
			}, 2*time.Hour)
			res, err := h.runAgent(runInput("summarize the launch plan"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != RunCompleted || len(h.delivered) != 1 || h.delivered[0] != "The plan has three phases." {
				t.Errorf("status %s, delivered %q: the kept answer was not posted after the fix", res.Status, h.delivered)
			}
			if n := len(h.modelCalls); n != 1 {
				t.Errorf("%d model calls: the answer was computed again instead of kept", n)
			}
		})
	}
	t.Run("msg_too_long", func(t *testing.T) {
		h := newHarness(t)
		h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
			return text("The plan has three phases."), nil
		}
		h.deliverErr = temporal.NewNonRetryableApplicationError("chat.update: msg_too_long", activities.ErrSlackPermanent, nil, "msg_too_long")
		if _, err := h.runAgent(runInput("summarize the launch plan")); err == nil {
			t.Error("a bug-class refusal did not fail the run")
		}
		for _, p := range h.posts {
			if strings.Contains(p.Text, "Slack refused my answer") {
				t.Errorf("waited on a refusal no operator can fix: %q", p.Text)
			}
		}
	})
}

// A destructive tool that checks first (tools.Spec.ChecksFirst, the mail tools) is called unapproved
// before anyone is asked: a refusal reaches the model with no prompt posted; otherwise its own
// prompt is asked and the approved call carries its Guard.
func TestChecksFirstToolRefusesBeforeAsking(t *testing.T) {
	for _, refuse := range []bool{true, false} {
		h := newHarness(t)
		h.route.Tools = append(h.route.Tools, "lucy_send_email")
		h.route.Specs = []activities.ToolFlags{{Name: "lucy_send_email", Destructive: true, ChecksFirst: true}}
		h.tool = func(in activities.ExecuteToolInput) (activities.ToolResult, error) {
			switch {
			case refuse:
				return activities.ToolResult{Content: "Error: the mailbox support cannot be used now: plain to a host not listed. Nothing was sent, and nobody was asked to approve it.", IsError: true}, nil
			case !in.Approved:
				return activities.ToolResult{Content: "Nothing was changed: sending this message needs a person's approval.", NeedsApproval: &activities.ApprovalNeed{
					Summary: `send an email to ana@client.test: "Re: Invoice 4411"`, Details: "Subject: Re: Invoice 4411", Guard: "sha256:g"}}, nil
			}
			return activities.ToolResult{Content: "Sent the message", Chars: 16}, nil
		}
		h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
			if n == 1 {
				return calls(toolCall("s1", "lucy_send_email", map[string]string{"to": "ana@client.test", "subject": "x", "body": "y"})), nil
			}
			return text("done"), nil
		}
		h.env.RegisterDelayedCallback(func() {
			h.env.SignalWorkflow(SignalApproval, Approval{Fingerprint: h.fp(0), Approved: true, User: "U1", Source: "button", Sig: "signed"})
		}, time.Minute)
		if _, err := h.runAgent(runInput("answer Ana")); err != nil {
			t.Fatal(err)
		}
		if refuse {
			if len(h.prompts) != 0 || len(h.toolCalls) != 1 || h.toolCalls[0].Approved || len(h.modelCalls) != 2 {
				t.Errorf("refused: prompts %+v, calls %+v", h.prompts, h.toolCalls)
			}
			continue
		}
		if len(h.prompts) != 1 || h.prompts[0].Details != "Subject: Re: Invoice 4411" {
			t.Fatalf("prompts %+v", h.prompts)
		}
		if len(h.toolCalls) != 2 || h.toolCalls[0].Approved || !h.toolCalls[1].Approved || h.toolCalls[1].Guard != "sha256:g" {
			t.Fatalf("tool calls %+v", h.toolCalls)
		}
	}
}

// A run started by new mail asks its channel, not its requester (the mailbox's connecter, who asked
// for nothing): the prompt and the approver check say so (activities.ApproversChannel), with the
// run's channel; a person's run keeps the requester-or-admin rule.
func TestMailRunApprovalGoesToTheChannel(t *testing.T) {
	for _, origin := range []string{OriginMail, ""} {
		h := newHarness(t)
		h.tool = func(in activities.ExecuteToolInput) (activities.ToolResult, error) {
			if !in.Approved {
				return activities.ToolResult{Content: "No change made: needs approval.", NeedsApproval: &activities.ApprovalNeed{
					Summary: "I'd like to overwrite `a.md`", Details: "old: 3 lines, new: 1 line", Guard: "g1"}}, nil
			}
			return activities.ToolResult{Content: "Wrote a.md", Chars: 10}, nil
		}
		h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
			if n == 1 {
				return calls(toolCall("w1", "lucy_write_file", map[string]string{"path": "a.md", "content": "new"})), nil
			}
			return text("done"), nil
		}
		h.env.RegisterDelayedCallback(func() {
			h.env.SignalWorkflow(SignalApproval, Approval{Fingerprint: h.fp(0), Approved: true, User: "U1", Source: "button", Sig: "signed"})
		}, time.Minute)
		in := runInput("triage new mail")
		in.Message.Origin = origin
		if _, err := h.runAgent(in); err != nil {
			t.Fatal(err)
		}
		want := ""
		if origin == OriginMail {
			want = activities.ApproversChannel
		}
		if len(h.prompts) != 1 || h.prompts[0].Approvers != want {
			t.Errorf("origin %q: prompts %+v; want approvers %q", origin, h.prompts, want)
		}
		if len(h.checks) != 1 || h.checks[0].Approvers != want || h.checks[0].RunChannel != "C1" {
			t.Errorf("origin %q: approver checks %+v; want approvers %q in C1", origin, h.checks, want)
		}
	}
}
