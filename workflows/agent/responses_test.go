package agent

import "testing"

func TestIsEmpty(t *testing.T) {
	tests := []struct {
		name    string
		content string
		calls   int
		want    bool
	}{
		{"nothing", "", 0, true},
		{"white space", " \n\t ", 0, true},
		{"text", "Done.", 0, false},
		{"tool calls only", "", 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsEmpty(tt.content, tt.calls); got != tt.want {
				t.Errorf("IsEmpty(%q, %d) = %v, want %v", tt.content, tt.calls, got, tt.want)
			}
		})
	}
}

func TestIsNarration(t *testing.T) {
	tests := []struct {
		name string
		text string
		want bool
	}{
		// Narration: describes the call instead of making it.
		{"would now call", "I would now call the search tool to find the latest pricing.", true},
		{"let me use the X tool", "Let me use the web search tool to look this up.", true},
		{"will search for", "I will search for the latest pricing on their website.", true},
		{"next I'll call identifier", "Next, I'll call COMPOSIO_SEARCH_TOOLS to find a calendar action.", true},
		{"call snake_case name", "Sure! I'll now call lucy_web_search with the query \"acme pricing\".", true},
		{"let me check", "Let me check your calendar for tomorrow.", true},
		{"going to fetch, announcing", "Got it. I'm going to fetch the subscriber list from Polar and then merge it with the Clerk users so the spreadsheet has both sources side by side, with one row per customer and the plan they are on...", true},
		{"typographic apostrophe", "I’ll search for that now.", true},
		{"first I'll query", "First, I'll query the database for last month's orders.", true},
		{"invoke the function", "To do this I am going to invoke the create_event function.", true},
		// Final answers.
		{"answer with let me know", "Here are your three meetings tomorrow:\n• 9:00 Standup\n• 11:00 Design review\n• 15:00 1:1 with Sam\nLet me know if you want me to move any of them.", false},
		{"past tense", "I searched the web and found three articles about the launch. The most detailed one is from TechCrunch.", false},
		{"done", "Done! The cron job runs every Monday at 9am.", false},
		{"offer with if", "I can search for more details if you'd like.", false},
		{"question offer", "Would you like me to search for flights next week?", false},
		{"want me to", "Want me to pull the same numbers for February?", false},
		{"check back", "I'll check back tomorrow morning and post the results here.", false},
		{"long answer with a future search at the end", "Revenue grew 12% in January, mostly from annual plans. Churn stayed flat at 2.1%, and the new pricing page lifted trial starts by 18%. The biggest single deal was Acme at $24k. Expansion revenue came from seat upgrades in three accounts. I'll search for the February numbers once they close next week.", false},
		{"use the data", "I'll use these numbers in next week's report, as you asked. Everything is in the spreadsheet above.", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsNarration(tt.text); got != tt.want {
				t.Errorf("IsNarration(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}
