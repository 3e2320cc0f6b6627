package workflows

import (
	"strings"
	"testing"
	"time"
)

func TestFormatStatusSaysWhatTheRunDoes(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 5, 0, 0, time.UTC)
	run := &RunStatus{Objective: "compare the vendors", Phase: "delegating", Turn: 3, StartedAt: "2026-11-23T10:00:00Z",
		LastTool: "delegate_to_research_agent", Usage: map[string]Usage{"m": {PromptTokens: 100, CompletionTokens: 20}}}
	got := FormatStatus(LaneStatus{Busy: true, Queued: []Message{{Text: "and then the summary"}}}, run, now)
	for _, want := range []string{"compare the vendors", "Working with a sub-agent", "step 3", "for 5m", "Last step: researching",
		"Tokens so far: 100 in, 20 out", "1 message(s) queued", "and then the summary"} {
		if !strings.Contains(got, want) {
			t.Errorf("status lacks %q:\n%s", want, got)
		}
	}
	if got := FormatStatus(LaneStatus{}, nil, now); got != "I'm not working on anything in this thread right now." {
		t.Errorf("idle: %q", got)
	}
}
