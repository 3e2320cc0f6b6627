package toolset

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/tools"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// allTools is every compiled-in tool: what this package links. A domain that New does not build, or
// that no file here links, shows as a difference.
var allTools = strings.Fields(`append_run_journal_entry ask_human delegate_to_code_agent delegate_to_document_agent
	delegate_to_integrations_agent delegate_to_research_agent get_run_journal lucy_check_heartbeat lucy_create_cron
	lucy_create_heartbeat lucy_current_time lucy_delete_cron lucy_delete_file lucy_delete_heartbeat lucy_edit_file
	lucy_generate_chart lucy_generate_csv lucy_generate_excel lucy_generate_pdf lucy_get_channel_history lucy_get_thread
	lucy_list_crons lucy_list_files lucy_list_heartbeats lucy_list_slack_channels lucy_modify_cron lucy_pause_cron
	lucy_post_message lucy_read_file lucy_resume_cron lucy_run_script lucy_search_slack_history lucy_trigger_cron
	lucy_web_fetch lucy_web_search lucy_write_file update_run_journal`)

// New binds every registered tool to its domain (it panics on one left without), and every domain
// is linked.
func TestNewBindsEveryDomain(t *testing.T) {
	set := New(Deps{DataDir: t.TempDir(), Log: zerolog.Nop()})
	if set.Runner == nil || set.Schedules == nil {
		t.Fatalf("New returned %+v", set)
	}
	if got := tools.Names(); !slices.Equal(got, allTools) {
		t.Errorf("tools.Names() = %v\nwant %v", got, allTools)
	}
}

// TestSchemasGolden pins what the model is told: a change to a description or schema shows in review.
// Run `go test ./tools/toolset -run TestSchemasGolden -update` after an intended change.
func TestSchemasGolden(t *testing.T) {
	r := New(Deps{DataDir: t.TempDir(), Log: zerolog.Nop()}).Runner
	got, err := json.MarshalIndent(r.Schemas(t.Context(), "TTEST", tools.Names()), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "schemas.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("schemas differ from %s; run with -update if the change is intended\ngot:\n%s", golden, got)
	}
}
