package agent

import (
	"strings"
	"testing"
	"time"
)

func TestShouldCheck(t *testing.T) {
	tests := []struct {
		turn  int
		since time.Duration
		want  bool
	}{
		{0, 0, false},
		{0, 5 * time.Minute, false}, // never before turn 2
		{1, 2 * time.Minute, false},
		{2, 10 * time.Second, false},
		{2, 60 * time.Second, true}, // time
		{3, 0, true},                // every 3 turns
		{4, 59 * time.Second, false},
		{5, 61 * time.Second, true},
		{6, time.Second, true},
		{7, 0, false},
		{9, 0, true},
	}
	for _, tt := range tests {
		if got := ShouldCheck(tt.turn, tt.since); got != tt.want {
			t.Errorf("ShouldCheck(%d, %v) = %v, want %v", tt.turn, tt.since, got, tt.want)
		}
	}
}

func TestParseVerdict(t *testing.T) {
	tests := []struct {
		in   string
		want Verdict
	}{
		{"C", Verdict{DecisionContinue, ""}},
		{"c", Verdict{DecisionContinue, ""}},
		{"I: Try the calendar tool instead of web search.", Verdict{DecisionIntervene, "Try the calendar tool instead of web search."}},
		{"I\nUse the results from turn 3.", Verdict{DecisionIntervene, "Use the results from turn 3."}},
		{"R - the plan ignores the second data source", Verdict{DecisionReplan, "the plan ignores the second data source"}},
		{"E", Verdict{DecisionEscalate, ""}},
		{"ESCALATE: model keeps producing invalid JSON", Verdict{DecisionEscalate, "model keeps producing invalid JSON"}},
		{"A: Which Stripe account do you mean?", Verdict{DecisionAskUser, "Which Stripe account do you mean?"}},
		{"ASK_USER\nWhich account?", Verdict{DecisionAskUser, "Which account?"}},
		{"ask user: which account?", Verdict{DecisionAskUser, "which account?"}},
		{"X: The API has no such endpoint.", Verdict{DecisionAbort, "The API has no such endpoint."}},
		{"ABORT", Verdict{DecisionAbort, ""}},
		{"**I** — stop searching; write the answer", Verdict{DecisionIntervene, "stop searching; write the answer"}},
		{"Decision: R\nGuidance: split the task per month", Verdict{DecisionReplan, "split the task per month"}},
		{"  `E`  ", Verdict{DecisionEscalate, ""}},
		{"- I: try X", Verdict{DecisionIntervene, "try X"}},
		{"INTERVENE try another query", Verdict{DecisionIntervene, "try another query"}},
		{"I think the agent is on track.", Verdict{DecisionContinue, ""}},
		{"A lot of progress so far", Verdict{DecisionContinue, ""}},
		{"Xylophone", Verdict{DecisionContinue, ""}},
		{"", Verdict{DecisionContinue, ""}},
		{"Q: what?", Verdict{DecisionContinue, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := ParseVerdict(tt.in); got != tt.want {
				t.Errorf("ParseVerdict(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
	long := ParseVerdict("I: " + strings.Repeat("g", 2000))
	if runeLen(long.Guidance) != VerdictGuidanceMaxChars {
		t.Errorf("guidance not capped: %d characters", runeLen(long.Guidance))
	}
}

func TestNewTurnReport(t *testing.T) {
	r := NewTurnReport(4, "lucy_web_search", strings.Repeat("a", 200), "Error: timed out\n"+strings.Repeat("b", 200), true)
	if runeLen(r.ToolArgsSummary) != ReportArgsChars || runeLen(r.ResultPreview) != ReportResultChars {
		t.Errorf("fields not cut: args %d, result %d", runeLen(r.ToolArgsSummary), runeLen(r.ResultPreview))
	}
	if r.ErrorSummary != "Error: timed out" || !r.HadError || r.Turn != 4 {
		t.Errorf("report = %+v", r)
	}
	if ok := NewTurnReport(1, "x", "{}", "fine", false); ok.ErrorSummary != "" {
		t.Errorf("error summary on success: %q", ok.ErrorSummary)
	}
}

func TestSupervisorPrompt(t *testing.T) {
	in := SupervisorInput{
		Request: "Pull every Stripe customer who churned in January, with their plan and MRR, and put them in a spreadsheet " +
			"I can share with the finance team on Monday; also email Dana the summary.",
		Intent:  "data",
		Plan:    "<execution_plan>\nGoal: churned customers\n1. List churned\n2. Build sheet\n</execution_plan>",
		Turn:    6,
		Elapsed: 95*time.Second + 400*time.Millisecond,
		Recent: []TurnReport{
			NewTurnReport(2, "first_tool", `{"a":1}`, "ignored, too old", false),
			NewTurnReport(3, "stripe_list_customers", `{"status":"canceled"}`, `{"data":[{"id":"cus_1"}]}`, false),
			NewTurnReport(4, "stripe_list_customers", `{"status":"canceled","page":2}`, "Error: rate limit", true),
			NewTurnReport(5, "lucy_generate_excel", `{"rows":40}`, "created churn.xlsx", false),
		},
		TotalErrors:       1,
		ConsecutiveErrors: 0,
		ResponseChars:     0,
		Model:             "minimax/minimax-m2.5",
	}
	got := SupervisorPrompt(in)
	golden(t, "supervisor_prompt.txt", got)
	if strings.Contains(got, "first_tool") {
		t.Error("more than the last 3 reports")
	}
	if !strings.Contains(got, "Request: "+in.Request[:150]+"\n") {
		t.Error("request not cut at 150 characters")
	}
	empty := SupervisorPrompt(SupervisorInput{Turn: 2})
	for _, want := range []string{"Plan:\nNo plan", "- none yet", "Intent: unknown"} {
		if !strings.Contains(empty, want) {
			t.Errorf("empty input prompt lacks %q", want)
		}
	}
}
