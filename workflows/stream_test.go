package workflows

import (
	"go.temporal.io/sdk/workflow"
	"slices"
	"testing"

	"github.com/lucy-agent/lucy/activities"
)

const streamedAnswer = "Here is the whole answer: the figures for Q3 went up by four percent, mostly from the new region."

// The run asks its model calls to stream into the thread; the answer's stream is delivered as the
// answer (DeliverInput.StreamTS).
func TestRunStreamsItsAnswer(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		r := text(streamedAnswer)
		r.StreamTS = "300.1"
		return r, nil
	}
	if _, err := h.runAgent(runInput("<@ULUCY> how did Q3 go?")); err != nil {
		t.Fatal(err)
	}
	st := h.modelCalls[0].Stream
	if st == nil || st.Channel != "C1" || st.ThreadTS != "100.1" || st.Recipient != "U1" || st.Team != "T1" {
		t.Fatalf("stream target %+v", st)
	}
	d := h.deliveries[len(h.deliveries)-1]
	if d.StreamTS != "300.1" || len(d.Discard) != 0 || d.PlaceholderTS != "200.1" {
		t.Fatalf("delivery: stream %q discard %v placeholder %q", d.StreamTS, d.Discard, d.PlaceholderTS)
	}
}

// When chat.startStream fails, the run stops asking for streams: the post-and-update path, once.
func TestRunFallsBackOnceWhenStreamingUnavailable(t *testing.T) {
	h := newHarness(t)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			r := calls(toolCall("c1", "lucy_web_search", map[string]any{"query": "q3"}))
			r.StreamUnavailable = true
			return r, nil
		}
		return text(streamedAnswer), nil
	}
	if _, err := h.runAgent(runInput("<@ULUCY> how did Q3 go?")); err != nil {
		t.Fatal(err)
	}
	if len(h.modelCalls) < 2 || h.modelCalls[0].Stream == nil {
		t.Fatalf("%d model calls; the first streams: %v", len(h.modelCalls), len(h.modelCalls) > 0 && h.modelCalls[0].Stream != nil)
	}
	for i, c := range h.modelCalls[1:] {
		if c.Stream != nil {
			t.Errorf("model call %d asks for a stream after Slack refused one", i+2)
		}
	}
	if d := h.deliveries[len(h.deliveries)-1]; d.StreamTS != "" || d.PlaceholderTS != "200.1" {
		t.Errorf("delivery %+v: want the placeholder updated", d)
	}
}

// A reset run whose answer is already in the thread streams nothing.
func TestAnsweredRunDoesNotStream(t *testing.T) {
	r := &run{hardened: true, answered: true, placeholder: "200.1", in: runInput("hi")}
	if r.streamTarget(nil) != nil {
		t.Fatal("a run whose answer exists streams again")
	}
}

// Delivery keeps the stream of the reply that is the answer and deletes the others.
func TestSettleStreams(t *testing.T) {
	r := &run{streams: []streamedReply{{"1.1", "first"}, {"1.2", "narration"}, {"1.3", "rewritten"}}}
	keep, discard := r.settleStreams("rewritten")
	slices.Sort(discard)
	if keep != "1.3" || !slices.Equal(discard, []string{"1.1", "1.2"}) {
		t.Errorf("keep %q discard %v", keep, discard)
	}
	keep, discard = r.settleStreams("a partial summary")
	if keep != "" || len(discard) != 3 {
		t.Errorf("an answer no stream shows: keep %q discard %v", keep, discard)
	}
}

// timelineHarness is a run whose Slack has the status line and the timeline, with the threeSteps
// model (three tool steps, then an answer).
func timelineHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.timelineWorks = true
	h.statusWorks = true
	h.route.Tools = append(h.route.Tools, "lucy_get_channel_history")
	h.model = threeSteps
	return h
}

// timelineUpdates renders the StreamSteps calls of a run as "ts: id=status … [stop]".
func timelineUpdates(h *harness) []string {
	var got []string
	for _, in := range h.timelines {
		s := in.TS + ":"
		for _, task := range in.Tasks {
			s += " " + task.ID + "=" + task.Status
		}
		if in.Stop {
			s += " stop"
		}
		got = append(got, s)
	}
	return got
}

// With the timeline (changeTimeline) and lean turns (changeLeanTurn): the first tool step opens it,
// each later step shows its tasks in progress while it runs, by its call's ID, and each step's
// outcome (complete or error) goes with the next model call, which streams into the timeline too;
// delivery stops it and keeps it as the answer, deleting no stream.
func TestRunShowsItsStepsInTheTimeline(t *testing.T) {
	h := timelineHarness(t)
	if _, err := h.runAgent(runInput("what did #sales say about the launch?")); err != nil {
		t.Fatal(err)
	}
	got := timelineUpdates(h)
	want := []string{
		": c1=in_progress", "400.1: c2=in_progress", "400.1: c3=in_progress c4=in_progress", "400.1: stop",
	}
	if !slices.Equal(got, want) {
		t.Errorf("timeline updates:\n got %q\nwant %q", got, want)
	}
	var carried []string
	for _, c := range h.modelCalls {
		s := ""
		if c.Stream != nil {
			for _, task := range c.Stream.Steps {
				s += " " + task.ID + "=" + task.Status
			}
		}
		carried = append(carried, s)
	}
	if want := []string{"", " c1=complete", " c2=complete", " c3=complete c4=complete"}; !slices.Equal(carried, want) {
		t.Errorf("cards carried by the model calls:\n got %q\nwant %q", carried, want)
	}
	if title := h.timelines[0].Tasks[0].Title; title != "reading #sales history" {
		t.Errorf("the first task's title %q, want the status line's words", title)
	}
	if st := h.modelCalls[0].Stream; st == nil || st.TS != "" {
		t.Errorf("the first model call streams on its own (no timeline yet): %+v", st)
	}
	for i, c := range h.modelCalls[1:] {
		if c.Stream == nil || c.Stream.TS != "400.1" {
			t.Errorf("model call %d does not stream into the timeline: %+v", i+2, c.Stream)
		}
	}
	d := h.deliveries[len(h.deliveries)-1]
	if d.StreamTS != "400.1" || len(d.Discard) != 0 || d.PlaceholderTS != "200.1" {
		t.Errorf("delivery: stream %q discard %v placeholder %q, want the timeline as the answer", d.StreamTS, d.Discard, d.PlaceholderTS)
	}
}

// A run recorded before lean turns (baseline version 1, no changeLeanTurn marker) shows each step's
// outcome with a StreamSteps activity of its own, as it did.
func TestTimelineBeforeLeanTurns(t *testing.T) {
	h := timelineHarness(t)
	h.env.OnGetVersion(changeBaseline, workflow.DefaultVersion, baselineVersion).Return(workflow.Version(1))
	h.env.OnGetVersion(changeLeanTurn, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	if _, err := h.runAgent(runInput("what did #sales say about the launch?")); err != nil {
		t.Fatal(err)
	}
	want := []string{
		": c1=in_progress", "400.1: c1=complete",
		"400.1: c2=in_progress", "400.1: c2=complete",
		"400.1: c3=in_progress c4=in_progress", "400.1: c3=complete c4=complete",
		"400.1: stop",
	}
	if got := timelineUpdates(h); !slices.Equal(got, want) {
		t.Errorf("timeline updates:\n got %q\nwant %q", got, want)
	}
	for i, c := range h.modelCalls {
		if c.Stream != nil && len(c.Stream.Steps) > 0 {
			t.Errorf("model call %d carries cards %+v on the old path", i+1, c.Stream.Steps)
		}
	}
}
