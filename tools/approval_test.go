package tools

import (
	"strings"
	"testing"
)

func TestApprovalSummary(t *testing.T) {
	tests := []struct {
		name, tool, args     string
		summary, wantDetails string
	}{
		{"post by name", PostMessage, `{"channel": "#general", "text": "Deploy at *5pm* today."}`,
			"post a message in #general", "Deploy at *5pm* today."},
		{"post by bare name", PostMessage, `{"channel": "Random", "text": "hi"}`, "post a message in #random", "hi"},
		{"post by ID", PostMessage, `{"channel": "C0123ABCD", "text": "hi"}`, "post a message in <#C0123ABCD>", "hi"},
		{"post by mention", PostMessage, `{"channel": "<#C0123ABCD|general>", "text": "hi"}`, "post a message in <#C0123ABCD>", "hi"},
		{"post as DM", PostMessage, `{"channel": "U0123ABCD", "text": "hi"}`, "post a message to <@U0123ABCD> as a direct message", "hi"},
		{"post keeps text exactly", PostMessage, `{"text": "  line 1\nline 2  ", "channel": "#ops"}`,
			"post a message in #ops", "  line 1\nline 2  "},
		{"post without channel", PostMessage, `{"text": "hi"}`, "post a message in an unnamed channel", "hi"},
		{"other tool", testRead, `{"path":"a.txt","offset":1}`, "run lucy_test_read (reading a test file)",
			"{\n  \"path\": \"a.txt\",\n  \"offset\": 1\n}"},
		{"unknown tool, bad JSON", "lucy_nope", `not json`, "run lucy_nope (lucy_nope)", "not json"},
		{"post masks credentials", PostMessage, `{"channel": "#ops", "text": "use https://bob:hunter2@example.com/x?token=abc"}`,
			"post a message in #ops", "use https://REDACTED@example.com/x?token=REDACTED"},
		{"other tool masks credentials", WebFetch, `{"url":"https://bob:hunter2@example.com/x?token=abc"}`,
			"run lucy_web_fetch (reading a web page)", "{\n  \"url\": \"https://REDACTED@example.com/x?token=REDACTED\"\n}"},
		{"bad JSON masks credentials", WebFetch, `{"url":"https://bob:hunter2@example.com/`, "run lucy_web_fetch (reading a web page)",
			`{"url":"https://REDACTED@example.com/`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			summary, details := ApprovalSummary(tt.tool, tt.args)
			if summary != tt.summary {
				t.Errorf("summary = %q, want %q", summary, tt.summary)
			}
			if details != tt.wantDetails {
				t.Errorf("details = %q, want %q", details, tt.wantDetails)
			}
		})
	}
}

// Every destructive tool gets its own wording: the generic "run <tool>" would ask a person to approve
// something they cannot judge.
func TestApprovalSummaryCoversDestructiveTools(t *testing.T) {
	for _, name := range Names() {
		s, _ := Lookup(name)
		if !s.Destructive {
			continue
		}
		summary, details := ApprovalSummary(name, `{}`)
		if strings.HasPrefix(summary, "run ") || details == "" {
			t.Errorf("ApprovalSummary(%s) = %q, %q: no specific wording", name, summary, details)
		}
	}
}
