package workflows

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
)

// A 👎 is recorded once per person per answer: a second click, a redelivery and a change of mind
// change nothing; another person's vote counts; a reason is kept once, in memory and in the memo;
// the lane's LucyFeedback says down; lucy_feedback_total counts each vote once.
func TestLaneRecordsFeedbackOncePerPersonPerAnswer(t *testing.T) {
	h, m := harnessWithMetrics(t)
	upserts := h.recordUpserts()
	var mu sync.Mutex
	var memo map[string]any
	h.env.OnUpsertMemo(mock.Anything).Run(func(args mock.Arguments) {
		mu.Lock()
		defer mu.Unlock()
		memo = args.Get(0).(map[string]any)
	}).Return(nil)
	run := RunID(laneKey, 1, "100.1")
	down := Feedback{Run: run, User: "U2", Value: FeedbackDown, EventID: "trigger:1"}
	h.runLane(msg("100.1", "U1", "<@ULUCY> summarize the launch plan"),
		signalAt(time.Hour, SignalFeedback, down),
		signalAt(time.Hour+time.Second, SignalFeedback, down),                                                // redelivered
		signalAt(time.Hour+2*time.Second, SignalFeedback, Feedback{Run: run, User: "U2", Value: FeedbackUp}), // changed their mind
		signalAt(time.Hour+3*time.Second, SignalFeedback, Feedback{Run: run, User: "U3", Value: FeedbackUp}),
		signalAt(time.Hour+4*time.Second, SignalFeedback, Feedback{Run: run, User: "U2", Value: FeedbackDown, Reason: "The numbers were from last year"}),
		signalAt(time.Hour+5*time.Second, SignalFeedback, Feedback{Run: run, User: "U2", Value: FeedbackDown, Reason: "again"}),
		signalAt(time.Hour+6*time.Second, SignalFeedback, Feedback{Run: run, User: "U3", Value: FeedbackDown, Reason: "a reason without a 👎"}),
		signalAt(time.Hour+7*time.Second, SignalFeedback, Feedback{Run: "lane:T9:C9:1.1:run:1:1.1", User: "U4", Value: FeedbackDown}), // another lane's run
	)
	if len(h.deliveries) != 1 || h.deliveries[0].Lane != LaneID(laneKey) {
		t.Fatalf("the answer does not carry its lane for the feedback buttons: %+v", h.deliveries)
	}
	waitForSeries(t, m, `lucy_feedback_total{value="down"} 1`, `lucy_feedback_total{value="up"} 1`)
	if len(h.kept) != 1 || h.kept[0].Reason != "The numbers were from last year" || h.kept[0].User != "U2" || h.kept[0].Channel != "C1" {
		t.Errorf("kept %+v", h.kept)
	}
	var fb []string
	for _, u := range upserts() {
		if strings.Contains(u, "LucyFeedback") {
			fb = append(fb, u)
		}
	}
	if len(fb) != 3 || fb[0] != "LucyFeedback=down" || fb[2] != "LucyFeedback=down" {
		t.Errorf("feedback upserts %q, want down on each of the 3 records", fb)
	}
	mu.Lock()
	recs, _ := memo[MemoFeedback].([]FeedbackRecord)
	mu.Unlock()
	if len(recs) != 2 || recs[0] != (FeedbackRecord{Run: run, User: "U2", Value: FeedbackDown, Reason: "The numbers were from last year"}) ||
		recs[1] != (FeedbackRecord{Run: run, User: "U3", Value: FeedbackUp}) {
		t.Errorf("memo %+v", memo)
	}
}
