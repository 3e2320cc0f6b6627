package agent

import (
	"slices"
	"strings"
	"testing"
)

func TestNeedsPlan(t *testing.T) {
	words := func(n int) string { return strings.TrimSpace(strings.Repeat("word ", n)) }
	tests := []struct {
		intent, message string
		want            bool
	}{
		// Simple intents never plan, however long the message.
		{"greeting", words(30), false},
		{"fast", words(30), false},
		{"follow_up", words(30), false},
		{"status", words(30), false},
		// Complex intents plan from 8 words.
		{"data", words(7), false},
		{"data", words(8), true},
		{"document", words(8), true},
		{"code", words(20), true},
		{"code_reasoning", words(8), true},
		{"tool_use", words(8), true},
		{"research", words(7), false},
		{"monitoring", words(8), true},
		// Other intents plan above 15 words.
		{"chat", words(15), false},
		{"chat", words(16), true},
		{"", words(16), true},
		{"reasoning", words(3), false},
		// Words as str.split counts them: runs of white space separate.
		{"data", "pull   all\tusers\nfrom clerk into a sheet", true},
	}
	for _, tt := range tests {
		t.Run(tt.intent+"/"+strings.Fields(tt.message + " x")[0], func(t *testing.T) {
			if got := NeedsPlan(tt.intent, tt.message); got != tt.want {
				t.Errorf("NeedsPlan(%q, %d words) = %v, want %v", tt.intent, wordCount(tt.message), got, tt.want)
			}
		})
	}
}

func TestPlanPrompt(t *testing.T) {
	var tools []string
	for i := range 40 {
		tools = append(tools, "tool_"+string(rune('a'+i%26))+strings.Repeat("x", i/26))
	}
	msg := strings.Repeat("Create a multi-sheet Excel with Clerk and Polar.sh user data. ", 10)
	got := PlanPrompt(msg, tools, "data")
	golden(t, "plan_prompt.txt", got)
	if strings.Contains(got, tools[30]) || !strings.Contains(got, tools[29]) {
		t.Error("want exactly the first 30 tools")
	}
	if !strings.Contains(got, "Request: "+msg[:300]+"\n") {
		t.Error("message not cut at 300 characters")
	}
}

func TestParsePlan(t *testing.T) {
	tests := []struct {
		name string
		text string
		want Plan
		ok   bool
	}{
		{
			name: "seed format",
			text: "GOAL: Create a multi-sheet Excel with Clerk + Polar.sh user data\n" +
				"1. Fetch all users from Clerk API [tool: COMPOSIO_EXECUTE_TOOL]\n" +
				"2. Fetch subscriber data from Polar.sh [tool: lucy_custom_polarsh_list_products]\n" +
				"3. Process and merge the datasets [tool: lucy_run_script]\n" +
				"4. Generate formatted Excel with summary sheet [tool: lucy_generate_excel]\n" +
				"SUCCESS: Excel file with raw data sheets + summary sheet uploaded to thread",
			want: Plan{
				Goal: "Create a multi-sheet Excel with Clerk + Polar.sh user data",
				Steps: []string{
					"Fetch all users from Clerk API [tool: COMPOSIO_EXECUTE_TOOL]",
					"Fetch subscriber data from Polar.sh [tool: lucy_custom_polarsh_list_products]",
					"Process and merge the datasets [tool: lucy_run_script]",
					"Generate formatted Excel with summary sheet [tool: lucy_generate_excel]",
				},
				Success: "Excel file with raw data sheets + summary sheet uploaded to thread",
			},
			ok: true,
		},
		{
			name: "markdown, mixed case, parens and step labels",
			text: "Here is the plan:\n\n**Goal:** Report January SEO\n\nStep 1: Connect to GSC\n2) Query clicks\n### Success criteria: Report posted",
			want: Plan{Goal: "Report January SEO", Steps: []string{"Connect to GSC", "Query clicks"}, Success: "Report posted"},
			ok:   true,
		},
		{
			name: "bullets when there are no numbers",
			text: "Goal - Summarize the thread\n- Read the thread\n- Write the summary",
			want: Plan{Goal: "Summarize the thread", Steps: []string{"Read the thread", "Write the summary"}},
			ok:   true,
		},
		{
			name: "capped at six steps",
			text: "GOAL: g\n1. a\n2. b\n3. c\n4. d\n5. e\n6. f\n7. g\n8. h\nSUCCESS: s",
			want: Plan{Goal: "g", Steps: []string{"a", "b", "c", "d", "e", "f"}, Success: "s"},
			ok:   true,
		},
		{name: "no goal", text: "1. a\n2. b\nSUCCESS: s"},
		{name: "one step", text: "GOAL: g\n1. a\nSUCCESS: s"},
		{name: "empty goal", text: "GOAL:\n1. a\n2. b"},
		{name: "prose", text: "I would start by looking at the data and then write a report."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParsePlan(tt.text)
			if ok != tt.ok || got.Goal != tt.want.Goal || got.Success != tt.want.Success || !slices.Equal(got.Steps, tt.want.Steps) {
				t.Errorf("ParsePlan = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestPlanRender(t *testing.T) {
	p := Plan{Goal: "Pull SEO data from Google Search Console for January",
		Steps:   []string{"Connect to GSC via COMPOSIO tools", "Query performance data for date range", "Format results as detailed report"},
		Success: "Complete report with all metrics delivered to user"}
	want := "<execution_plan>\nGoal: Pull SEO data from Google Search Console for January\n1. Connect to GSC via COMPOSIO tools\n" +
		"2. Query performance data for date range\n3. Format results as detailed report\n" +
		"Success: Complete report with all metrics delivered to user\n</execution_plan>"
	if got := p.Render(); got != want {
		t.Errorf("Render =\n%s\nwant\n%s", got, want)
	}
	if got := (Plan{Goal: "g", Steps: []string{"a", "b"}}).Render(); strings.Contains(got, "Success") {
		t.Errorf("Render without success criteria = %q", got)
	}
}
