package workflows

import (
	"slices"
	"testing"

	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
)

// quickRoute offers a quick tool (the clock) and one that is not (a page fetch), with the flags
// Route records for them.
func quickRoute(h *harness) {
	h.route.Tools = []string{"lucy_current_time", "lucy_web_fetch"}
	h.route.Specs = []activities.ToolFlags{
		{Name: "lucy_current_time", Idempotent: true, Quick: true},
		{Name: "lucy_web_fetch", Idempotent: true},
	}
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		switch n {
		case 1:
			return calls(toolCall("c1", "lucy_current_time", map[string]string{"timezone": "Europe/Paris"})), nil
		case 2:
			return calls(toolCall("c2", "lucy_web_fetch", map[string]string{"url": "https://e.example/a"})), nil
		}
		return activities.ModelReply{Content: "It is noon, and the page says hello.", Model: "m"}, nil
	}
	h.tool = func(in activities.ExecuteToolInput) (activities.ToolResult, error) {
		return activities.ToolResult{Content: "result of " + in.CallID, Chars: 12}, nil
	}
}

// toolEntry is the transcript entry of tool call id in a model call's input.
func toolEntry(in activities.CallModelInput, id string) (activities.Entry, bool) {
	i := slices.IndexFunc(in.Transcript.Entries, func(e activities.Entry) bool { return e.Role == "tool" && e.ToolCallID == id })
	if i < 0 {
		return activities.Entry{}, false
	}
	return in.Transcript.Entries[i], true
}

// With lean turns (changeLeanTurn), a quick tool runs as a local activity, and the next model call
// carries its result inline; any other tool stays an activity, its result by reference.
func TestQuickToolRunsInTheWorkflowTask(t *testing.T) {
	h := newHarness(t)
	quickRoute(h)
	if _, err := h.runAgent(runInput("what time is it, and what does the page say?")); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.toolLocal, []bool{true, false}) {
		t.Fatalf("local activity per tool call: %v, want the clock local and the fetch not", h.toolLocal)
	}
	if len(h.modelCalls) != 3 {
		t.Fatalf("%d model calls, want 3", len(h.modelCalls))
	}
	e, ok := toolEntry(h.modelCalls[1], "c1")
	if !ok || e.Ref != "" || e.Text != "result of c1" {
		t.Errorf("the quick tool's result in the next call: %+v (found %v), want it inline", e, ok)
	}
	e, ok = toolEntry(h.modelCalls[2], "c2")
	if !ok || e.Ref == "" || e.Text != "" {
		t.Errorf("the fetch's result in the next call: %+v (found %v), want it by reference", e, ok)
	}
}

// A run recorded before lean turns runs every tool as an activity, as it did.
func TestQuickToolBeforeLeanTurns(t *testing.T) {
	h := newHarness(t)
	h.env.OnGetVersion(changeBaseline, workflow.DefaultVersion, baselineVersion).Return(workflow.Version(1))
	h.env.OnGetVersion(changeLeanTurn, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	quickRoute(h)
	if _, err := h.runAgent(runInput("what time is it, and what does the page say?")); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.toolLocal, []bool{false, false}) {
		t.Fatalf("local activity per tool call: %v, want none on the old path", h.toolLocal)
	}
	if e, ok := toolEntry(h.modelCalls[1], "c1"); !ok || e.Ref == "" {
		t.Errorf("the clock's result on the old path: %+v, want it by reference", e)
	}
}

// A first reply that narrates before its tool calls keeps its stream as the run's timeline (the
// model call is asked to, StreamTarget.KeepNarration): the steps' cards go into it, and no second
// stream is opened for them.
func TestNarrationBecomesTheTimeline(t *testing.T) {
	h := timelineHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		reply, err := threeSteps(n, in)
		if n == 1 && in.Stream != nil && in.Stream.KeepNarration {
			reply.TimelineTS = "450.1"
		}
		return reply, err
	}
	if _, err := h.runAgent(runInput("what did #sales say about the launch?")); err != nil {
		t.Fatal(err)
	}
	if st := h.modelCalls[0].Stream; st == nil || !st.KeepNarration {
		t.Fatalf("the first model call was not asked to keep its narration: %+v", st)
	}
	got := timelineUpdates(h)
	want := []string{"450.1: c1=in_progress", "450.1: c2=in_progress", "450.1: c3=in_progress c4=in_progress", "450.1: stop"}
	if !slices.Equal(got, want) {
		t.Errorf("timeline updates:\n got %q\nwant %q", got, want)
	}
	if st := h.modelCalls[1].Stream; st == nil || st.TS != "450.1" || len(st.Steps) != 1 || st.Steps[0].ID != "c1" {
		t.Errorf("the second model call: %+v, want it in the narration's stream with c1's card", st)
	}
	if d := h.deliveries[len(h.deliveries)-1]; d.StreamTS != "450.1" {
		t.Errorf("delivery into %q, want the narration's stream", d.StreamTS)
	}
}
