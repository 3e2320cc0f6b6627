package tools

import "testing"

func TestLinkSource(t *testing.T) {
	for name, want := range map[string]bool{
		WebFetch: true, WebSearch: true, GetChannelHistory: true, GetThread: true, SearchSlackHistory: true,
		"mcp__github__get_issue": true, "lucy_custom_jira_search": true,
		"lucy_run_script": false, ReadFile: false, WriteFile: false, EditFile: false, "lucy_list_crons": false, PostMessage: false,
	} {
		if got := LinkSource(name); got != want {
			t.Errorf("LinkSource(%s) = %v, want %v", name, got, want)
		}
	}
}
