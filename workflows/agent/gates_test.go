package agent

import (
	"slices"
	"strings"
	"testing"
)

// long pads a response past every "too short" threshold.
func long(s string) string {
	return s + " " + strings.Repeat("The numbers are consistent with last month and nothing unusual stands out. ", 4)
}

func TestQualityGate(t *testing.T) {
	tests := []struct {
		name                      string
		request, response, intent string
		confidence                int
		failed                    bool
		issueHas                  []string
	}{
		{
			name:    "clean answer",
			request: "Pull my Stripe revenue for January", intent: "data",
			response:   long("Stripe revenue for January was $48,200 across 212 invoices."),
			confidence: 10,
		},
		{
			name:    "service confusion alone does not fail",
			request: "Show me the Linear issues assigned to me", intent: "tool_use",
			response:   long("Here are your Jira tickets: ENG-1, ENG-2."),
			confidence: 7, issueHas: []string{"about Linear but the response talks about Jira"},
		},
		{
			name:    "lower-case common word is not a service",
			request: "Show me the Stripe revenue trend", intent: "data",
			response:   long("Stripe revenue shows linear growth, with a notion of seasonality."),
			confidence: 10,
		},
		{
			name:    "both services named is not confusion",
			request: "Compare GitHub and GitLab pricing", intent: "research",
			response:   long("GitHub costs $4 per user; GitLab costs $29."),
			confidence: 10,
		},
		{
			name:    "cannot find while asked to act",
			request: "Find the invoice from Acme in Gmail", intent: "tool_use",
			response:   long("I couldn’t find any invoice from Acme in Gmail."),
			confidence: 8, issueHas: []string{"cannot find"},
		},
		{
			name:    "cannot find without a request to act",
			request: "thanks, that's all", intent: "chat",
			response:   long("You're welcome! I can't wait to help again."),
			confidence: 10,
		},
		{
			name:    "complex request, very short answer",
			request: "Build a churn report for January with plan, MRR and reason per customer", intent: "data",
			response:   "Done.",
			confidence: 8, issueHas: []string{"very short"},
		},
		{
			name:    "short answer to a simple request is fine",
			request: "hi lucy", intent: "greeting",
			response:   "Hey! What can I do for you?",
			confidence: 10,
		},
		{
			name:    "suggesting an unrelated service",
			request: "Schedule a meeting with Sam tomorrow at 3pm in Google Calendar", intent: "tool_use",
			response:   long("The meeting is on Google Calendar for 3pm. Alternatively, you could use Calendly to let Sam pick a time."),
			confidence: 8, issueHas: []string{"suggests services the person did not ask about: Calendly"},
		},
		{
			name:    "everything wrong fails",
			request: "Pull all my Linear issues and summarize the blockers for the team", intent: "data",
			response:   "I couldn't find them. You could try Jira.",
			confidence: 1, failed: true,
			issueHas: []string{"talks about Jira", "cannot find", "very short", "suggests services"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := QualityGate(tt.request, tt.response, tt.intent)
			if got.Confidence != tt.confidence || got.Failed != tt.failed {
				t.Errorf("QualityGate = %+v, want confidence %d failed %v", got, tt.confidence, tt.failed)
			}
			if len(got.Issues) != len(tt.issueHas) {
				t.Errorf("issues = %q, want %d", got.Issues, len(tt.issueHas))
			}
			for _, want := range tt.issueHas {
				if !slices.ContainsFunc(got.Issues, func(s string) bool { return strings.Contains(s, want) }) {
					t.Errorf("no issue mentions %q: %q", want, got.Issues)
				}
			}
		})
	}
}

func TestQualityGateFailThreshold(t *testing.T) {
	// -3 and -2 make 5: at or below 6 with issues fails.
	got := QualityGate("Show me the Linear issues assigned to me", long("I couldn't find anything in Jira."), "tool_use")
	if got.Confidence != 5 || !got.Failed {
		t.Errorf("QualityGate = %+v, want confidence 5, failed", got)
	}
}

func TestVerificationGate(t *testing.T) {
	words60 := strings.TrimSpace(strings.Repeat("please ", 60))
	tests := []struct {
		name                      string
		request, response, intent string
		issueHas                  []string
	}{
		{
			name:    "complete answer passes",
			request: "Pull all users from Clerk into a spreadsheet", intent: "data",
			response: long("I exported all 1,204 Clerk users into the spreadsheet attached above."),
		},
		{
			name:    "sample when all was asked",
			request: "Export all customers from Stripe", intent: "data",
			response: long("Here are a few of your customers: Acme, Globex, Initech."),
			issueHas: []string{"looks like a sample"},
		},
		{
			name:    "sample wording without an all-request passes",
			request: "Give me some example customers from Stripe", intent: "data",
			response: long("For example: Acme, Globex, Initech."),
		},
		{
			name:    "multi-part request missing a part",
			request: "Make an Excel of the Q1 deals, email it to Dana, and post a summary here", intent: "document",
			response: long("I created the spreadsheet with every Q1 deal. Summary: 14 deals closed, $310k in total."),
			issueHas: []string{"does not account for an email"},
		},
		{
			name:    "multi-part request fully covered",
			request: "Make an Excel of the Q1 deals, email it to Dana, and post a summary here", intent: "document",
			response: long("The spreadsheet is attached and I emailed it to Dana. Summary: 14 deals closed, $310k in total."),
		},
		{
			name:    "single deliverable is not multi-part",
			request: "Make a PDF of the quarterly numbers", intent: "document",
			response: long("All done, it's attached."),
		},
		{
			name:    "short data response",
			request: "How many users signed up?", intent: "data",
			response: "42 users signed up in total.",
			issueHas: []string{"data request got a very short response"},
		},
		{
			name:    "short response to a non-data question passes",
			request: "What time is it in Tokyo?", intent: "chat",
			response: "It's 9:14 pm in Tokyo.",
		},
		{
			name:    "degradation phrase",
			request: "What's on my calendar tomorrow?", intent: "tool_use",
			response: long("I'm sorry, but I was unable to access your calendar."),
			issueHas: []string{"apologizes or reports a failure"},
		},
		{
			name:    "complex request, short output",
			request: words60, intent: "chat",
			response: "Sure, I've noted that.",
			issueHas: []string{"long, detailed request"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := VerificationGate(tt.request, tt.response, tt.intent)
			if got.Failed != (len(tt.issueHas) > 0) || len(got.Issues) != len(tt.issueHas) {
				t.Fatalf("VerificationGate = %+v, want issues %q", got, tt.issueHas)
			}
			for i, want := range tt.issueHas {
				if !strings.Contains(got.Issues[i], want) {
					t.Errorf("issue %d = %q, want it to mention %q", i, got.Issues[i], want)
				}
			}
			if want := 10 - VerificationPenalty*len(tt.issueHas); got.Confidence != want {
				t.Errorf("Confidence = %d, want %d", got.Confidence, want)
			}
		})
	}
}
