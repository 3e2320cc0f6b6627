package toolset

import (
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/tools"
)

// New binds every compiled-in tool to its domain (it panics on one left without), and the catalogue
// is the whole list: a domain package that is no longer linked, or a tool renamed, shows here.
func TestNewLinksEveryDomain(t *testing.T) {
	set := New(Deps{DataDir: t.TempDir(), Log: zerolog.Nop()})
	if set.Runner == nil || set.Schedules == nil {
		t.Fatalf("New = %+v", set)
	}
	want := []string{
		"append_run_journal_entry", "ask_human",
		"delegate_to_code_agent", "delegate_to_document_agent", "delegate_to_integrations_agent", "delegate_to_research_agent",
		"get_run_journal",
		"lucy_check_heartbeat", "lucy_create_cron", "lucy_create_heartbeat", "lucy_current_time", "lucy_delete_cron",
		"lucy_delete_file", "lucy_delete_heartbeat", "lucy_edit_file", "lucy_generate_chart", "lucy_generate_csv",
		"lucy_generate_excel", "lucy_generate_pdf", "lucy_get_channel_history", "lucy_get_thread", "lucy_list_crons",
		"lucy_list_files", "lucy_list_heartbeats", "lucy_list_slack_channels", "lucy_modify_cron", "lucy_pause_cron",
		"lucy_post_message", "lucy_read_file", "lucy_resume_cron", "lucy_run_script", "lucy_search_slack_history",
		"lucy_trigger_cron", "lucy_web_fetch", "lucy_web_search", "lucy_write_file",
		"update_run_journal",
	}
	if got := tools.Names(); !slices.Equal(got, want) {
		t.Errorf("tools.Names() = %q\nwant %q", got, want)
	}
}
