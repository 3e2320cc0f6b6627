package intent

import (
	"slices"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	const deep = 4 // a thread with some history
	tests := []struct {
		name    string
		in      string
		depth   int
		intent  string
		tier    string
		modules []string
		complex bool
	}{
		// Simple intents.
		{"empty", "", 0, IntentChat, TierFast, nil, false},
		{"mention only", "<@U0LUCY>", 0, IntentChat, TierFast, nil, false},
		{"emoji only", ":tada:", 0, IntentChat, TierFast, nil, false},
		{"greeting", "hi lucy!", 0, IntentGreeting, TierFast, nil, false},
		{"good morning", "<@U0LUCY> good morning", 0, IntentGreeting, TierFast, nil, false},
		{"thanks", "thanks!", 0, IntentChat, TierFast, nil, false},
		{"ack", "got it", deep, IntentChat, TierFast, nil, false},
		{"status", "what are you working on?", 0, IntentStatus, TierFast, nil, false},
		{"status in a deep thread", "any progress?", deep, IntentStatus, TierFast, nil, false},
		{"short chit-chat", "lol that's wild", 0, IntentChat, TierFast, nil, false},
		{"short creative request", "write a haiku about Mondays", 0, IntentChat, TierDefault, nil, false},
		{"short imperative", "stop the EC2 instances in us-east-1", 0, IntentToolUse, TierDefault, []string{ModuleIntegrations}, false},
		{"long chat", "I was wondering about what we talked about yesterday and I am not sure the approach is right for us",
			0, IntentChat, TierDefault, nil, true},

		// Lookups and reasoning.
		{"lookup", "what is the capital of Australia?", 0, IntentLookup, TierFast, nil, false},
		{"lookup who", "who is the CEO of Acme?", 0, IntentLookup, TierFast, nil, false},
		{"lookup look up", "look up the weather in Paris", 0, IntentLookup, TierFast, nil, false},
		{"reasoning why", "why is the sky blue?", 0, IntentReasoning, TierDefault, nil, false},
		{"reasoning trade-offs", "should we raise prices or cut costs? walk me through the trade-offs", 0,
			IntentReasoning, TierDefault, nil, false},
		{"long reasoning is planned", "think through whether we should move our support team to a follow the sun model across three time zones next year",
			0, IntentReasoning, TierDefault, nil, true},

		{"explain", "explain how OAuth works", 0, IntentReasoning, TierDefault, nil, false},
		{"opinion beats lookup", "what do you think about four-day weeks?", 0, IntentReasoning, TierDefault, nil, false},
		{"lookup who won", "who won the game last night?", 0, IntentLookup, TierFast, nil, false},
		{"website up check is not code", "can you check if the website is up", 0, IntentChat, TierDefault, nil, false},

		// Code.
		{"code words", "write a python script that dedupes this CSV", 0, IntentCode, TierCode,
			[]string{ModuleCoding, ModuleDocuments}, true},
		{"code block", "fix this ```TypeError: x is undefined```", 0, IntentCode, TierCode, []string{ModuleCoding}, false},
		{"inline code", "what does `git rebase -i` do", 0, IntentCode, TierCode, []string{ModuleCoding}, false},
		{"github link", "<https://github.com/acme/api/pull/42|#42> can you review this?", 0, IntentCode, TierCode,
			[]string{ModuleCoding}, false},
		{"short bug", "fix the bug", 0, IntentCode, TierCode, []string{ModuleCoding}, false},
		{"landing page", "create a landing page for our new product", 0, IntentCode, TierCode, []string{ModuleCoding}, true},

		// Research.
		{"research compare", "research the top 5 competitors of Acme and compare their pricing", 0, IntentResearch,
			TierResearch, []string{ModuleResearch}, true},
		{"deep dive", "do a deep dive on the EV battery supply chain", 0, IntentResearch, TierResearch,
			[]string{ModuleResearch}, true},
		{"competitive analysis", "competitive analysis of Acme vs Globex", 0, IntentResearch, TierResearch,
			[]string{ModuleResearch}, false},
		{"research with a report", "write a research report on our top competitors", 0, IntentResearch, TierResearch,
			[]string{ModuleResearch, ModuleDocuments}, true},

		// Documents and data.
		{"pdf report", "make a PDF report of last week's signups", 0, IntentDocument, TierDocument,
			[]string{ModuleDataTasks, ModuleDocuments}, true},
		{"export spreadsheet", "export the leads to a spreadsheet", 0, IntentDocument, TierDocument,
			[]string{ModuleDocuments}, false},
		{"summarize a pdf", "summarize this pdf <https://x.com/a.pdf>", 0, IntentDocument, TierDocument,
			[]string{ModuleDocuments}, false},
		{"data in a spreadsheet", "analyze the churn in this spreadsheet", 0, IntentData, TierCode,
			[]string{ModuleDataTasks, ModuleDocuments}, false},
		{"numbers", "pull the Q3 revenue numbers", 0, IntentData, TierCode, []string{ModuleDataTasks}, false},
		{"how many", "how many signups did we get yesterday?", 0, IntentData, TierCode, []string{ModuleDataTasks}, false},
		{"slack formatted data", "<@U0LUCY> <https://docs.google.com/spreadsheets/d/abc|Q3 sheet> can you chart the churn by month?",
			0, IntentData, TierCode, []string{ModuleDataTasks, ModuleDocuments, ModuleIntegrations}, true},
		{"data with a greeting", "hi, can you pull the Q3 numbers?", 0, IntentData, TierCode, []string{ModuleDataTasks}, false},

		// Monitoring, scheduling, integrations.
		{"monitoring", "keep an eye on our status page and alert me if it goes down", 0, IntentMonitoring,
			TierDefault, []string{ModuleScheduling}, true},
		{"scheduling", "remind me every monday at 9am to submit my timesheet", 0, IntentToolUse, TierDefault,
			[]string{ModuleScheduling}, true},
		{"email", "send an email to Sam about the offsite", 0, IntentToolUse, TierDefault,
			[]string{ModuleIntegrations}, true},
		{"short email is not planned", "email Sam the offsite agenda", 0, IntentToolUse, TierDefault,
			[]string{ModuleIntegrations}, false},
		{"jira", "create a Jira ticket for the onboarding flow", 0, IntentToolUse, TierDefault,
			[]string{ModuleIntegrations}, true},
		{"calendar question", "what's on my calendar today?", 0, IntentToolUse, TierDefault,
			[]string{ModuleIntegrations}, false},

		// Follow-ups need a thread.
		{"follow-up other one", "and the other one?", deep, IntentFollowUp, TierDefault, nil, false},
		{"follow-up what about", "what about EMEA?", deep, IntentFollowUp, TierDefault, nil, false},
		{"follow-up keeps its keywords' tier", "same for Q4", deep, IntentFollowUp, TierCode, []string{ModuleDataTasks}, false},
		{"follow-up as a pdf", "as a PDF please", deep, IntentFollowUp, TierDocument, []string{ModuleDocuments}, false},
		{"follow-up why", "why?", deep, IntentFollowUp, TierDefault, nil, false},
		{"follow-up pointing back", "send it to Sam", deep, IntentFollowUp, TierDefault, nil, false},
		{"follow-up try again", "try again", deep, IntentFollowUp, TierDefault, nil, false},
		{"no follow-up at top level", "what about EMEA?", 0, IntentChat, TierFast, nil, false},
		{"no follow-up in a shallow thread", "and the other one?", 1, IntentChat, TierFast, nil, false},
		{"long message in a thread is its own task", "now build a dashboard with revenue, churn and retention broken down by region and plan tier for the board",
			deep, IntentData, TierCode, []string{ModuleDataTasks}, true},
		{"status beats follow-up", "and how's it going?", deep, IntentStatus, TierFast, nil, false},

		// Frontier only when strongly signalled.
		{"frontier: heavy and steps", "Do a comprehensive competitive analysis of Acme, Globex and Initech: first research pricing, then compare features, then build a PDF report",
			0, IntentResearch, TierFrontier, []string{ModuleResearch, ModuleDocuments}, true},
		{"frontier: heavy and numbered list", "Build an end-to-end onboarding flow:\n1. pull new signups from HubSpot\n2. create a Notion page for each\n3. email them a welcome pack",
			0, IntentData, TierFrontier, []string{ModuleDataTasks, ModuleIntegrations}, true},
		{"heavy alone is not frontier", "do a comprehensive review of our Q3 numbers", 0, IntentData, TierCode,
			[]string{ModuleDataTasks}, true},
		{"steps alone are not frontier", "research competitors, then compare pricing, then write a report", 0,
			IntentResearch, TierResearch, []string{ModuleResearch, ModuleDocuments}, true},
		{"deep dive alone is not frontier", "deep dive into competitor pricing", 0, IntentResearch, TierResearch,
			[]string{ModuleResearch}, false},
		{"chat never frontier", "comprehensive step by step", 0, IntentChat, TierFast, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classify(tt.in, tt.depth)
			want := Route{Intent: tt.intent, Tier: tt.tier, Modules: tt.modules, Complex: tt.complex}
			if got.Intent != want.Intent || got.Tier != want.Tier || !slices.Equal(got.Modules, want.Modules) || got.Complex != want.Complex {
				t.Errorf("Classify(%q, %d) = %+v, want %+v", tt.in, tt.depth, got, want)
			}
		})
	}
}

func TestClassifyValues(t *testing.T) {
	intents := []string{IntentChat, IntentGreeting, IntentLookup, IntentCode, IntentData, IntentDocument,
		IntentResearch, IntentReasoning, IntentMonitoring, IntentToolUse, IntentFollowUp, IntentStatus}
	tiers := []string{TierFast, TierDefault, TierCode, TierResearch, TierDocument, TierFrontier}
	order := []string{ModuleCoding, ModuleDataTasks, ModuleResearch, ModuleDocuments, ModuleIntegrations, ModuleScheduling}
	inputs := []string{
		"", "hi", "what's the status?", benchText, "email the Q3 report to the board every monday and monitor churn",
		"research python dashboards", "```x```", "and?", "why", "create a calendar invite", strings.Repeat("data ", 200),
	}
	for _, in := range inputs {
		for _, depth := range []int{0, 1, 2, 10} {
			r := Classify(in, depth)
			if !slices.Contains(intents, r.Intent) || !slices.Contains(tiers, r.Tier) {
				t.Errorf("Classify(%q, %d) = %+v: unknown intent or tier", in, depth, r)
			}
			last := -1
			for _, m := range r.Modules {
				i := slices.Index(order, m)
				if i <= last {
					t.Errorf("Classify(%q, %d).Modules = %q: unknown, repeated or out of order", in, depth, r.Modules)
				}
				last = i
			}
			again := Classify(in, depth)
			if again.Intent != r.Intent || again.Tier != r.Tier || !slices.Equal(again.Modules, r.Modules) || again.Complex != r.Complex {
				t.Errorf("Classify(%q, %d) = %+v, then %+v", in, depth, r, again)
			}
		}
	}
}

const benchText = "<@U0LUCY> can you pull last quarter's revenue and churn numbers from " +
	"<https://docs.google.com/spreadsheets/d/abc|the finance sheet>, compare them with Q2, then put " +
	"together a short PDF report with a chart for the board? :pray:"

var benchInputs = []string{
	benchText,
	"hi lucy!",
	"what are you working on?",
	"stop the EC2 instances in us-east-1",
	"write a python script that dedupes this CSV",
	"Do a comprehensive competitive analysis of Acme, Globex and Initech: first research pricing, then compare features, then build a PDF report",
}

func BenchmarkClassify(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		for _, in := range benchInputs {
			Classify(in, 3)
		}
	}
}

func BenchmarkClassifyLong(b *testing.B) {
	b.ReportAllocs()
	in := benchText
	for b.Loop() {
		Classify(in, 3)
	}
}
