package agent

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The loop's state lives in workflow memory and crosses continue-as-new as JSON: it must round-trip.
func TestStateRoundTrip(t *testing.T) {
	type state struct {
		Loop     LoopDetector  `json:"loop"`
		Caps     ToolCaps      `json:"caps"`
		Stuck    StuckDetector `json:"stuck"`
		Recovery Recovery      `json:"recovery"`
		Journal  Journal       `json:"journal"`
		Plan     Plan          `json:"plan"`
		Msgs     []Msg         `json:"msgs"`
	}
	var s state
	s.Loop.Observe(calls(`a {"x":1}`, `b {}`))
	s.Caps.Observe([]string{"lucy_send_email", "lucy_create_cron"})
	s.Stuck.Observe([]bool{true})
	s.Recovery.Next(3, 1_000_000, 1000)
	if _, err := s.Journal.Apply(ToolAppendRunJournalEntry, `{"section":"blockers","entry":"x"}`); err != nil {
		t.Fatal(err)
	}
	s.Plan = Plan{Goal: "g", Steps: []string{"a", "b"}}
	s.Msgs = conversation()

	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var got state
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Errorf("round trip changed the state:\n got %+v\nwant %+v", got, s)
	}
}
