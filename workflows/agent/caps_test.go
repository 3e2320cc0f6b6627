package agent

import (
	"slices"
	"strings"
	"testing"
)

func TestToolCaps(t *testing.T) {
	var c ToolCaps
	steps := []struct {
		names      []string
		warn, stop []string
	}{
		{[]string{"lucy_send_email", "lucy_send_email"}, nil, nil},
		{[]string{"lucy_send_email"}, nil, nil},
		{[]string{"lucy_send_email", "lucy_web_search"}, []string{"lucy_send_email"}, nil}, // 4th call warns
		{[]string{"lucy_send_email"}, nil, nil},                                            // 5th: warned already
		{[]string{"lucy_send_email"}, nil, []string{"lucy_send_email"}},                    // 6th stops
		{[]string{"lucy_send_email"}, nil, []string{"lucy_send_email"}},                    // and keeps stopping
	}
	for i, s := range steps {
		v := c.Observe(s.names)
		if !slices.Equal(v.Warn, s.warn) || !slices.Equal(v.Stop, s.stop) {
			t.Errorf("step %d: Observe(%v) = warn %v stop %v, want warn %v stop %v", i, s.names, v.Warn, v.Stop, s.warn, s.stop)
		}
		if (len(v.Warn)+len(v.Stop) > 0) != (v.Message != "") {
			t.Errorf("step %d: message %q does not match the verdict", i, v.Message)
		}
	}
	if c.Counts["lucy_web_search"] != 0 {
		t.Errorf("an exempt tool was counted: %v", c.Counts)
	}
}

func TestToolCapsWarnAndStopInOneBatch(t *testing.T) {
	var c ToolCaps
	v := c.Observe([]string{"b", "a", "a", "a", "a", "a", "a", "b", "b", "b"})
	if !slices.Equal(v.Stop, []string{"a"}) || !slices.Equal(v.Warn, []string{"b"}) {
		t.Errorf("got warn %v stop %v, want warn [b] stop [a]", v.Warn, v.Stop)
	}
	if !strings.Contains(v.Message, "a has reached its limit") || !strings.Contains(v.Message, "called b 4 times") {
		t.Errorf("message %q", v.Message)
	}
}

func TestCapExempt(t *testing.T) {
	tests := map[string]bool{
		"lucy_web_search": true, "COMPOSIO_SEARCH_TOOLS": true, "lucy_search_slack_history": true,
		"list_files": true, "lucy_list_crons": true, "lucy_list_slack_channels": true,
		"get_notes": true, "lucy_get_channel_history": true, "read_file": true, "lucy_read_emails": true,
		"get_run_journal": true, "update_run_journal": true, "append_run_journal_entry": true,
		"lucy_web_fetch": true, "lucy_run_script": true, "COMPOSIO_REMOTE_WORKBENCH": false,
		"lucy_send_email": false, "lucy_edit_file": false, "lucy_create_cron": false,
		"COMPOSIO_MULTI_EXECUTE_TOOL": false, "delegate_to_code_agent": false, "forget_password": false,
	}
	for _, name := range sortedKeys(tests) {
		t.Run(name, func(t *testing.T) {
			if got := CapExempt(name); got != tests[name] {
				t.Errorf("CapExempt(%q) = %v, want %v", name, got, tests[name])
			}
		})
	}
}
