package gateway

import (
	"context"
	"testing"

	"github.com/lucy-agent/lucy/workflows"
)

// "forget that" after a run (whose memory step posted "Noted: … Say “forget that” …") goes to the
// lane as a request for the agent; while a run works, or in a thread without a lane, it is the
// cancel it always was (ignored without a lane), and "cancel that" stays a cancel after a run.
func TestForgetThatAfterARunIsARequest(t *testing.T) {
	ctx := context.Background()
	msg := func(text string) workflows.Message {
		return workflows.Message{EventID: "Ev-" + text, Team: testTeam, Channel: "C1", TS: "100.2", ThreadTS: "100.1", User: "U1",
			Text: "<@ULUCY> " + text, Kind: "app_mention"}
	}
	key := msg("").Key()
	for _, tc := range []struct {
		name   string
		status *workflows.LaneStatus
		text   string
		want   string
	}{
		{"idle after a run", &workflows.LaneStatus{Runs: 1}, "forget that", outcomeMessage},
		{"idle after a run, other words", &workflows.LaneStatus{Runs: 2}, "Forget about it!", outcomeMessage},
		{"a run working", &workflows.LaneStatus{Runs: 1, Busy: true, CurrentRun: "run-1"}, "forget that", outcomeCancel},
		{"no lane", nil, "forget that", outcomeIgnored},
		{"cancel after a run", &workflows.LaneStatus{Runs: 1}, "cancel that", outcomeCancel},
		{"forget everything I asked drops the queue", &workflows.LaneStatus{Runs: 1}, "forget everything I asked", outcomeCancel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &fakeHandoff{}
			if tc.status != nil {
				h.lanes = map[workflows.LaneKey]bool{key: true}
				h.setStatus(key, *tc.status)
			}
			got, err := handOff(ctx, h, msg(tc.text))
			if err != nil || got != tc.want {
				t.Fatalf("handOff(%q) = %s, %v; want %s", tc.text, got, err, tc.want)
			}
			if tc.want == outcomeMessage && (len(h.gotMessages()) != 1 || h.gotMessages()[0].Control != "" || len(h.gotCancels()) != 0) {
				t.Fatalf("messages handed off: %+v, cancels: %+v", h.gotMessages(), h.gotCancels())
			}
			if tc.want == outcomeCancel && (len(h.gotMessages()) != 0 || len(h.gotCancels()) != 1) {
				t.Fatalf("messages handed off: %+v, cancels: %+v", h.gotMessages(), h.gotCancels())
			}
		})
	}
}
