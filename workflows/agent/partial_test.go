package agent

import (
	"regexp"
	"strings"
	"testing"
)

func TestHumanToolName(t *testing.T) {
	tests := []struct{ name, want string }{
		{"lucy_spaces_init", "setting up the project"},
		{"lucy_spaces_deploy", "deploying your app"},
		{"lucy_generate_excel", "creating a spreadsheet"},
		{"lucy_send_email", "sending an email"},
		{"lucy_create_heartbeat", "setting up a monitor"},
		{"lucy_check_heartbeat", "checking a monitor"},
		{"lucy_create_cron", "creating a scheduled task"},
		{"lucy_custom_polar_list_products", "pulling data from Polar"},
		{"lucy_custom_polarsh_get_subscribers", "pulling data from Polarsh"},
		{"COMPOSIO_REMOTE_WORKBENCH", "running some code"},
		{"delegate_to_research_agent", "researching"},
		{"get_run_journal", "keeping track of my progress"},
		{"hubspot_search_contacts", "searching"},
		{"notion_get_page", "looking things up"},
		{"frobnicate", "working on it"},
		{"", "working on it"},
		{"lucy_custom_", "working on it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HumanToolName(tt.name)
			if got != tt.want {
				t.Errorf("HumanToolName(%q) = %q, want %q", tt.name, got, tt.want)
			}
			if tt.name != "" && strings.Contains(got, tt.name) {
				t.Errorf("HumanToolName(%q) = %q contains the raw name", tt.name, got)
			}
		})
	}
}

func TestErrorClass(t *testing.T) {
	tests := []struct{ result, want string }{
		{"Error: request timed out after 30s", ErrTimeout},
		{"context deadline exceeded", ErrTimeout},
		{"connection timeout", ErrTimeout}, // the fixed order: timeout first
		{"HTTP 429 Too Many Requests", ErrRateLimit},
		{"rate limit exceeded", ErrRateLimit},
		{"dial tcp: ECONNREFUSED", ErrConnection},
		{"connection reset by peer", ErrConnection},
		{"403 Forbidden", ErrPermission},
		{"missing permission: calendar.write", ErrPermission},
		{"404 page not found", ErrNotFound},
		{"resource NOT FOUND", ErrNotFound},
		{"id 14290 processed", ""},
		{"all good", ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.result, func(t *testing.T) {
			if got := ErrorClass(tt.result); got != tt.want {
				t.Errorf("ErrorClass(%q) = %q, want %q", tt.result, got, tt.want)
			}
		})
	}
}

// leaks finds what PartialResults must never show: JSON, tool names, paths.
var leaks = regexp.MustCompile(`[{}\[\]]|"\w+"\s*:|\b\w+_\w+\b|/\w+/\w+|[A-Za-z]:\\|lucy|composio|\.py\b`)

func TestPartialResults(t *testing.T) {
	records := []ToolRecord{
		{Name: "COMPOSIO_SEARCH_TOOLS", Result: `{"tools":[{"slug":"POLAR_LIST"}]}`},
		{Name: "lucy_custom_polar_list_products", IsError: true, Result: `{"error":"ECONNREFUSED 10.0.0.3:443","path":"/workspace/w1/custom_wrappers/polar.py"}`},
	}
	tests := []struct {
		name    string
		records []ToolRecord
		last    string
		reason  string
		want    string
	}{
		{
			name: "with context", records: records, reason: ReasonError,
			want: "I was pulling data from Polar but hit a connection issue. Let me try a different approach.",
		},
		{
			name: "without context", reason: ReasonError,
			want: "I ran into a hiccup while processing your request. Let me try a different approach.",
		},
		{
			name: "unknown tool, known error class", reason: "",
			records: []ToolRecord{{Name: "frobnicate", IsError: true, Result: "429 too many requests"}},
			want:    "I hit a rate limit while working on your request. Let me try a different approach.",
		},
		{
			name: "known tool that failed without a class", reason: ReasonTimeout,
			records: []ToolRecord{{Name: "lucy_generate_excel", IsError: true, Result: "boom"}},
			want:    "I was creating a spreadsheet but ran into a problem. This is taking longer than it should — reply here and I'll pick it up from where I stopped.",
		},
		{
			name: "last tool succeeded, earlier one failed with a class", reason: ReasonAbort,
			records: []ToolRecord{{Name: "lucy_web_search", IsError: true, Result: "timed out"}, {Name: "lucy_send_email", Result: "sent"}},
			want:    "I was sending an email but hit a timeout. Could you tell me a bit more about what you need, or should I try a different approach?",
		},
		{
			name: "partial success", records: records, reason: ReasonTimeout,
			last: "So far: Polar has 3 products and 212 active subscribers; Clerk lists 1,204 users.",
			want: "Here's what I found so far: So far: Polar has 3 products and 212 active subscribers; Clerk lists 1,204 users.\n\nI'm still piecing together the full picture.",
		},
		{
			name: "partial success cleaned of JSON, code, paths and tool names", records: records,
			last: "I called lucy_custom_polar_list_products and COMPOSIO_SEARCH_TOOLS. The report lists 212 subscribers, see https://example.com/docs/report for details.\n" +
				"```json\n{\"count\": 212}\n```\nSaved to /workspace/w1/out/report.xlsx and `C:\\tmp\\x`. {\"a\": 1}",
			want: "Here's what I found so far: The report lists 212 subscribers, see https://example.com/docs/report for details.\n\nI'm still piecing together the full picture.",
		},
		{
			name: "narration is not a finding", records: records, reason: ReasonError,
			last: "Let me check the Polar API again.",
			want: "I was pulling data from Polar but hit a connection issue. Let me try a different approach.",
		},
		{
			name: "free-text reason as a parenthetical", reason: "the turn limit",
			want: "I ran into a hiccup while processing your request (the turn limit). This is taking longer than it should — reply here and I'll pick it up from where I stopped.",
		},
		{
			name: "free-text sentence reason", records: records, reason: "The API has no such endpoint.",
			want: "I was pulling data from Polar but hit a connection issue (the API has no such endpoint). Let me try a different approach.",
		},
		{
			name: "repeating reason asks the person", reason: "repeating the same step too often",
			want: "I ran into a hiccup while processing your request (repeating the same step too often). Could you tell me a bit more about what you need, or should I try a different approach?",
		},
		{
			name: "reason naming a tool is left out", reason: "lucy_web_search kept failing",
			want: "I ran into a hiccup while processing your request. Let me try a different approach.",
		},
		{
			name: "reason with a path is left out", reason: "could not open /var/lib/lucy/x.db",
			want: "I ran into a hiccup while processing your request. Let me try a different approach.",
		},
		{
			name: "nothing but JSON", reason: ReasonError,
			last: `{"data": [{"id": "cus_1", "email": "a@b.c"}]}`,
			want: "I ran into a hiccup while processing your request. Let me try a different approach.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PartialResults(tt.records, tt.last, tt.reason)
			if got != tt.want {
				t.Errorf("PartialResults =\n%q\nwant\n%q", got, tt.want)
			}
			// Links are fine to show; everything else internal is not.
			if l := leaks.FindString(strings.ReplaceAll(got, "https://example.com/docs/report", "")); l != "" {
				t.Errorf("PartialResults leaks %q: %q", l, got)
			}
		})
	}
}
