package workflows

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
)

func TestLaneDedupesRetriesAndDoubleDelivery(t *testing.T) {
	h := newHarness(t)
	m := msg("100.1", "U1", "<@ULUCY> summarize the launch plan")
	m.Kind = "app_mention"
	retry := m // Slack retry: same event_id
	double := m
	double.EventID, double.Kind = "EvOther", "message" // same channel+ts, different event
	h.runLane(m, signalAt(time.Second, SignalMessage, retry), signalAt(2*time.Second, SignalMessage, double))
	if n := len(h.delivered); n != 1 {
		t.Fatalf("answers = %d, want exactly one run", n)
	}
}

func TestLaneQueuesWhileBusyAndRunsInOrder(t *testing.T) {
	h := newHarness(t)
	h.modelMock.After(time.Minute)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		return text("answer " + string(rune('0'+n))), nil
	}
	h.runLane(msg("100.1", "U1", "write the weekly summary please"),
		signalAt(10*time.Second, SignalMessage, msg("100.2", "U2", "and then list the open incidents")))
	if len(h.delivered) != 2 || h.delivered[0] != "answer 1" || h.delivered[1] != "answer 2" {
		t.Fatalf("delivered %v, want two runs in order", h.delivered)
	}
}

func TestLaneFoldsAdditionsIntoTheRunningRun(t *testing.T) {
	h := newHarness(t)
	h.modelMock.After(time.Minute)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(toolCall("c1", "lucy_web_fetch", map[string]string{"url": "https://e.example"})), nil
		}
		return text("done"), nil
	}
	h.runLane(msg("100.1", "U1", "draft the release notes for 2.0"),
		signalAt(10*time.Second, SignalMessage, msg("100.2", "U1", "also mention the new API")))
	if len(h.delivered) != 1 {
		t.Fatalf("delivered %d answers, want the addition folded into one run", len(h.delivered))
	}
	if !h.sawInline(1, "also mention the new API") {
		t.Errorf("folded message not given to the model: %v", h.inlineTexts(1))
	}
}

func TestLaneCancelDuringModelCall(t *testing.T) {
	h := newHarness(t)
	h.modelMock.After(10 * time.Minute)
	h.runLane(msg("100.1", "U1", "research the competitors in depth"),
		signalAt(30*time.Second, SignalCancel, CancelRequest{EventID: "EvC", Channel: "C1", TS: "100.2", User: "U1", Text: "cancel that"}))
	if len(h.delivered) != 0 {
		t.Fatalf("a cancelled run delivered %v", h.delivered)
	}
	if len(h.updates) == 0 || h.updates[len(h.updates)-1] != "_Stopped._" {
		t.Errorf("placeholder not marked stopped: %v", h.updates)
	}
	if !h.reacted("100.2", "octagonal_sign") {
		t.Errorf("cancel message not marked: %+v", h.reactions)
	}
	for _, p := range h.posts {
		if strings.Contains(strings.ToLower(p.Text), "sorry") {
			t.Errorf("apology posted: %q", p.Text)
		}
	}
}

func TestLaneCancelDuringToolCallKeepsCompletedResults(t *testing.T) {
	h := newHarness(t)
	h.toolMock.After(10 * time.Minute)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		return calls(toolCall("c1", "lucy_web_fetch", map[string]string{"url": "https://slow.example"})), nil
	}
	h.runLane(msg("100.1", "U1", "crawl the slow site"),
		signalAt(time.Minute, SignalCancel, CancelRequest{Channel: "C1", TS: "100.3", User: "U1", Text: "stop"}))
	if len(h.delivered) != 0 || len(h.modelCalls) != 1 {
		t.Fatalf("delivered %v after %d model calls", h.delivered, len(h.modelCalls))
	}
}

func TestLaneCancelWhenIdleSaysSo(t *testing.T) {
	h := newHarness(t)
	h.runLane(msg("100.1", "U1", "what's the capital of Peru"),
		signalAt(time.Hour, SignalCancel, CancelRequest{Channel: "C1", TS: "100.5", User: "U1", Text: "cancel"}))
	found := false
	for _, p := range h.posts {
		found = found || strings.Contains(p.Text, "nothing running")
	}
	if !found {
		t.Errorf("no 'nothing running' answer: %+v", h.posts)
	}
}

func TestLaneStatusNeverStartsARun(t *testing.T) {
	h := newHarness(t)
	st := msg("100.1", "U1", "what are you working on?")
	st.Control, st.StatusText = "status", "I'm not working on anything in this thread right now."
	h.runLane(st)
	if len(h.modelCalls) != 0 {
		t.Fatalf("status started a run")
	}
	if len(h.posts) != 1 || h.posts[0].Text != st.StatusText {
		t.Errorf("posts %+v", h.posts)
	}
}

func TestLaneFastPath(t *testing.T) {
	h := newHarness(t)
	h.runLane(msg("100.1", "U1", "thanks Lucy!"))
	if len(h.modelCalls) != 0 {
		t.Fatal("a thank-you started the agent loop")
	}
	if len(h.reactions) == 0 {
		t.Error("no reaction")
	}
}

func (h *harness) reacted(ts, emoji string) bool {
	for _, r := range h.reactions {
		if r.TS == ts && r.Emoji == emoji {
			return true
		}
	}
	return false
}

// approvalScript makes the model ask to delete a file once, then answer with what the tool said.
func approvalScript(h *harness) {
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(toolCall("d1", "lucy_delete_file", map[string]string{"path": "old/report.csv"})), nil
		}
		return text("finished"), nil
	}
}

func (h *harness) fp(i int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i >= len(h.prompts) {
		return "missing"
	}
	return h.prompts[i].Fingerprint
}

func TestApprovalByRequesterButton(t *testing.T) {
	h := newHarness(t)
	approvalScript(h)
	h.runLane(msg("100.1", "U1", "delete the old report csv"),
		step{at: time.Minute, do: func(h *harness) {
			h.env.SignalWorkflow(SignalApproval, Approval{Fingerprint: h.fp(0), Approved: true, User: "U1", Source: "button", Sig: "signed"})
		}})
	if len(h.toolCalls) != 1 || h.toolCalls[0].Name != "lucy_delete_file" {
		t.Fatalf("tool calls %+v", h.toolCalls)
	}
	if len(h.resolved) != 1 || !strings.Contains(h.resolved[0].Outcome, "Approved by <@U1>") {
		t.Errorf("prompt not resolved: %+v", h.resolved)
	}
	if !strings.Contains(h.prompts[0].Details, "old/report.csv") {
		t.Errorf("prompt does not say exactly what will be done: %+v", h.prompts[0])
	}
}

func TestApprovalRefusedForOtherUserThenNaturalLanguageYes(t *testing.T) {
	h := newHarness(t)
	approvalScript(h)
	h.runLane(msg("100.1", "U1", "delete the old report csv"),
		step{at: time.Minute, do: func(h *harness) {
			h.env.SignalWorkflow(SignalApproval, Approval{Fingerprint: h.fp(0), Approved: true, User: "U2", Source: "button", Sig: "signed"})
		}},
		signalAt(2*time.Minute, SignalMessage, msg("100.7", "U1", "yes, do it")))
	if len(h.ephemerals) != 1 || h.ephemerals[0].User != "U2" {
		t.Fatalf("refusal not sent to the other user: %+v", h.ephemerals)
	}
	if len(h.toolCalls) != 1 {
		t.Fatalf("the requester's 'yes, do it' did not approve: %+v", h.toolCalls)
	}
}

func TestApprovalByAdmin(t *testing.T) {
	h := newHarness(t)
	h.admins["UADMIN"] = true
	approvalScript(h)
	h.runLane(msg("100.1", "U1", "delete the old report csv"),
		step{at: time.Minute, do: func(h *harness) {
			h.env.SignalWorkflow(SignalApproval, Approval{Fingerprint: h.fp(0), Approved: true, User: "UADMIN", Source: "button", Sig: "signed"})
		}})
	if len(h.toolCalls) != 1 {
		t.Fatal("admin approval did not run the tool")
	}
}

func TestApprovalDenied(t *testing.T) {
	h := newHarness(t)
	approvalScript(h)
	h.runLane(msg("100.1", "U1", "delete the old report csv"),
		signalAt(time.Minute, SignalMessage, msg("100.8", "U1", "no")))
	if len(h.toolCalls) != 0 {
		t.Fatal("denied tool ran")
	}
	if !h.sawInline(1, "declined") {
		t.Errorf("model not told: %v", h.inlineTexts(1))
	}
}

func TestApprovalExpiryRepromptsThenGivesUp(t *testing.T) {
	h := newHarness(t)
	approvalScript(h)
	h.runLane(msg("100.1", "U1", "delete the old report csv"),
		// a click on the first, expired proposal after the re-prompt is refused
		step{at: DefaultApprovalTTL + time.Minute, do: func(h *harness) {
			h.env.SignalWorkflow(SignalApproval, Approval{Fingerprint: h.fp(0), Approved: true, User: "U1", Source: "button", Sig: "signed"})
		}})
	if len(h.prompts) != 2 {
		t.Fatalf("prompts = %d, want the original and one re-prompt", len(h.prompts))
	}
	if h.prompts[0].Fingerprint == h.prompts[1].Fingerprint {
		t.Error("re-prompt reused the fingerprint")
	}
	if len(h.toolCalls) != 0 {
		t.Fatal("an expired proposal ran the tool")
	}
	if len(h.ephemerals) != 1 || !strings.Contains(h.ephemerals[0].Text, "no longer active") {
		t.Errorf("stale click not refused: %+v", h.ephemerals)
	}
	if !h.sawInline(1, "in time") {
		t.Errorf("model not told it expired: %v", h.inlineTexts(1))
	}
}

func TestLaneStatusQuery(t *testing.T) {
	h := newHarness(t)
	h.modelMock.After(time.Minute)
	var got LaneStatus
	h.runLane(msg("100.1", "U1", "write the weekly summary please"),
		signalAt(5*time.Second, SignalMessage, msg("100.2", "U2", "then list the incidents")),
		step{at: 10 * time.Second, do: func(h *harness) {
			v, err := h.env.QueryWorkflow(QueryStatus)
			if err != nil {
				h.t.Error(err)
				return
			}
			if err := v.Get(&got); err != nil {
				h.t.Error(err)
			}
		}})
	if !got.Busy || got.CurrentRun != RunID(laneKey, 1, "100.1") || len(got.Queued) != 1 {
		b, _ := json.Marshal(got)
		t.Errorf("status %s", b)
	}
}

// The seen-set is carried across continue-as-new: a redelivery after it is still a duplicate.
func TestLaneDedupeSurvivesContinueAsNew(t *testing.T) {
	h := newHarness(t)
	m := msg("100.1", "U1", "summarize the launch plan")
	st := &LaneState{Seen: m.DedupeKeys(), Runs: 3}
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(SignalMessage, m) }, 0)
	h.env.ExecuteWorkflow(LaneWorkflowName, LaneInput{Key: laneKey, State: st})
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(h.modelCalls) != 0 {
		t.Fatal("a message seen before continue-as-new started a run")
	}
}

func TestLaneDedupeBounded(t *testing.T) {
	l := &lane{seen: map[string]bool{}}
	for i := 0; i < MaxSeenKeys+10; i++ {
		l.dedupe([]string{fmt.Sprint("k", i)})
	}
	if len(l.st.Seen) != MaxSeenKeys || len(l.seen) != MaxSeenKeys {
		t.Fatalf("seen %d/%d, want %d", len(l.st.Seen), len(l.seen), MaxSeenKeys)
	}
	if l.dedupe([]string{"k0"}) {
		t.Error("the oldest key should have been forgotten")
	}
	if !l.dedupe([]string{fmt.Sprint("k", MaxSeenKeys+9)}) {
		t.Error("a recent key was forgotten")
	}
}

func TestCancelWhileAwaitingApprovalResolvesThePrompt(t *testing.T) {
	h := newHarness(t)
	approvalScript(h)
	h.runLane(msg("100.1", "U1", "delete the old report csv"),
		signalAt(time.Minute, SignalCancel, CancelRequest{Channel: "C1", TS: "100.9", User: "U1", Text: "cancel that"}))
	if len(h.toolCalls) != 0 {
		t.Fatal("tool ran after cancel")
	}
	if len(h.resolved) != 1 || h.resolved[0].Outcome != "Cancelled" {
		t.Errorf("prompt not resolved as cancelled: %+v", h.resolved)
	}
}

// runsStarted returns the agent runs that called the model, in order (run workflow IDs).
func (h *harness) runsStarted() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.modelRuns {
		if len(out) == 0 || out[len(out)-1] != r {
			out = append(out, r)
		}
	}
	return out
}

// Who may stop a running request: its requester or an admin. Anyone else is told so, privately,
// and the run goes on to its answer.
func TestLaneCancelRights(t *testing.T) {
	for _, tc := range []struct {
		name, by string
		admin    bool
		stopped  bool
	}{
		{name: "requester", by: "U1", stopped: true},
		{name: "admin", by: "UADMIN", admin: true, stopped: true},
		{name: "someone else", by: "U2"},
		{name: "nobody (a signal sent by hand)", by: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if tc.admin {
				h.admins[tc.by] = true
			}
			h.modelMock.After(time.Minute)
			h.runLane(msg("100.1", "U1", "research the competitors in depth"),
				signalAt(30*time.Second, SignalCancel, CancelRequest{EventID: "EvC", Channel: "C1", TS: "100.2", User: tc.by, Text: "cancel that"}))
			if tc.stopped {
				if len(h.delivered) != 0 || !h.reacted("100.2", "octagonal_sign") {
					t.Fatalf("not stopped: delivered %v, reactions %+v", h.delivered, h.reactions)
				}
				if len(h.ephemerals) != 0 {
					t.Errorf("refusal sent for an allowed cancel: %+v", h.ephemerals)
				}
				return
			}
			if len(h.delivered) != 1 || h.delivered[0] != "Done." {
				t.Fatalf("a refused cancel stopped the run: delivered %v, updates %v", h.delivered, h.updates)
			}
			if h.reacted("100.2", "octagonal_sign") {
				t.Error("a refused cancel was marked as done")
			}
			if tc.by == "" {
				if len(h.ephemerals) != 0 {
					t.Errorf("refusal sent to nobody: %+v", h.ephemerals)
				}
				return
			}
			if len(h.ephemerals) != 1 || h.ephemerals[0].User != tc.by || h.ephemerals[0].ThreadTS != "100.1" ||
				h.ephemerals[0].Text != "Only <@U1> (who asked) or an admin can stop this." {
				t.Fatalf("refusal %+v, want one to %s in the thread", h.ephemerals, tc.by)
			}
			for _, p := range h.posts {
				if strings.Contains(p.Text, "Only <@") {
					t.Errorf("refusal posted to everyone: %q", p.Text)
				}
			}
		})
	}
}

// "cancel everything" from someone who neither asked for the running request nor is an admin drops
// only their own queued messages: the run and everyone else's queued requests go on.
func TestLaneCancelEverythingByAnotherDropsOnlyTheirOwn(t *testing.T) {
	h := newHarness(t)
	h.modelMock.After(time.Minute)
	h.runLane(msg("100.1", "U1", "write the weekly summary please"),
		signalAt(5*time.Second, SignalMessage, msg("100.2", "U2", "then list the open incidents")),
		signalAt(6*time.Second, SignalMessage, msg("100.3", "U3", "and draft the changelog")),
		signalAt(7*time.Second, SignalMessage, msg("100.4", "U2", "and count the tickets")),
		signalAt(10*time.Second, SignalCancel, CancelRequest{EventID: "EvC", Channel: "C1", TS: "100.5", User: "U2", Text: "cancel everything", DropQueued: true}))
	want := []string{RunID(laneKey, 1, "100.1"), RunID(laneKey, 2, "100.3")}
	if got := h.runsStarted(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("runs %v, want %v (the requester's and U3's; U2's two dropped)", got, want)
	}
	if len(h.delivered) != 2 {
		t.Errorf("delivered %v, want two answers", h.delivered)
	}
	if !h.reacted("100.5", "octagonal_sign") {
		t.Errorf("the dropped messages were not acknowledged: %+v", h.reactions)
	}
	if len(h.ephemerals) != 1 || h.ephemerals[0].User != "U2" ||
		h.ephemerals[0].Text != "I dropped your queued messages. Only <@U1> (who asked) or an admin can stop this." {
		t.Errorf("refusal %+v", h.ephemerals)
	}
}

// The requester's "cancel everything" stops their run and drops their own queued messages, not
// what others asked for meanwhile; an admin's drops everything.
func TestLaneCancelEverythingByRequesterAndAdmin(t *testing.T) {
	for _, tc := range []struct {
		by   string
		want []string
	}{
		{by: "U1", want: []string{RunID(laneKey, 1, "100.1"), RunID(laneKey, 2, "100.3")}},
		{by: "UADMIN", want: []string{RunID(laneKey, 1, "100.1")}},
	} {
		t.Run(tc.by, func(t *testing.T) {
			h := newHarness(t)
			h.admins["UADMIN"] = true
			h.modelMock.After(time.Minute)
			h.runLane(msg("100.1", "U1", "write the weekly summary please"),
				signalAt(5*time.Second, SignalMessage, msg("100.2", "U1", "then list the open incidents")),
				signalAt(6*time.Second, SignalMessage, msg("100.3", "U3", "and draft the changelog")),
				signalAt(10*time.Second, SignalCancel, CancelRequest{EventID: "EvC", Channel: "C1", TS: "100.5", User: tc.by, Text: "cancel everything", DropQueued: true}))
			if got := h.runsStarted(); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("runs %v, want %v", got, tc.want)
			}
			if len(h.ephemerals) != 0 {
				t.Errorf("refusal for an allowed cancel: %+v", h.ephemerals)
			}
		})
	}
}

// A recurring job's firing runs as a request of the job's creator: they (or an admin) may stop it,
// not whoever else is in its thread.
func TestLaneCancelOfAJobFiringIsTheCreators(t *testing.T) {
	for _, tc := range []struct {
		by      string
		stopped bool
	}{{by: "U2"}, {by: "U9", stopped: true}} {
		t.Run(tc.by, func(t *testing.T) {
			h := newHarness(t)
			h.modelMock.After(time.Minute)
			h.env.OnSignalExternalWorkflow(mock.Anything, "cron:T1:standup-1", "", SignalJobDone, mock.Anything).Return(nil)
			job := Message{EventID: "job:cron:T1:standup-1", Team: "T1", Channel: "C1", TS: "100.1", ThreadTS: "100.1",
				User: "U9", Text: "post the standup summary", Kind: KindScheduled, Job: "cron:T1:standup-1"}
			h.runLane(job, signalAt(30*time.Second, SignalCancel, CancelRequest{EventID: "EvC", Channel: "C1", TS: "100.2", User: tc.by, Text: "stop"}))
			if stopped := len(h.delivered) == 0; stopped != tc.stopped {
				t.Fatalf("stopped = %v, want %v (delivered %v)", stopped, tc.stopped, h.delivered)
			}
			if !tc.stopped && (len(h.ephemerals) != 1 || h.ephemerals[0].Text != "Only <@U9> (whose scheduled job this is) or an admin can stop this.") {
				t.Errorf("refusal %+v", h.ephemerals)
			}
		})
	}
}

// A lane that took a cancel before changeCancelRights replays it as it was: anyone stopped the run.
// (Such a lane started before changeBaseline too.)
func TestLaneCancelRightsOldPath(t *testing.T) {
	h := newHarness(t)
	h.env.OnGetVersion(changeBaseline, workflow.DefaultVersion, baselineVersion).Return(workflow.DefaultVersion)
	h.env.OnGetVersion(changeCancelRights, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	h.modelMock.After(time.Minute)
	h.runLane(msg("100.1", "U1", "research the competitors in depth"),
		signalAt(30*time.Second, SignalCancel, CancelRequest{EventID: "EvC", Channel: "C1", TS: "100.2", User: "U2", Text: "cancel that"}))
	if len(h.delivered) != 0 || len(h.ephemerals) != 0 {
		t.Fatalf("old path: delivered %v, ephemerals %+v; want the run stopped as before", h.delivered, h.ephemerals)
	}
}
