package toolset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/integrations"
	"github.com/lucy-agent/lucy/integrations/catalog"
	"github.com/lucy-agent/lucy/integrations/email"
	"github.com/lucy-agent/lucy/integrations/mcp"
	"github.com/lucy-agent/lucy/integrations/openapi"
	"github.com/lucy-agent/lucy/memory"
	"github.com/lucy-agent/lucy/sandbox"
	"github.com/lucy-agent/lucy/schedules"
	"github.com/lucy-agent/lucy/skills"
	"github.com/lucy-agent/lucy/spend"
	"github.com/lucy-agent/lucy/subagents"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/activitylog"
	"github.com/lucy-agent/lucy/tools/browser"
	"github.com/lucy-agent/lucy/tools/documents"
	"github.com/lucy-agent/lucy/tools/filesearch"
	"github.com/lucy-agent/lucy/tools/toolset"
	"github.com/lucy-agent/lucy/tools/tooltest"
)

// The test binary is its own sandbox child for lucy_run_script (as the lucy binary is in production).
func TestMain(m *testing.M) {
	if sandbox.IsChild() {
		os.Exit(sandbox.Main(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// allTools is every compiled-in tool: New links every domain, so a domain left out of it (or a tool
// renamed) shows here.
var allTools = []string{
	"append_run_journal_entry", "ask_human", "delegate_to_code_agent", "delegate_to_document_agent",
	"delegate_to_integrations_agent", "delegate_to_research_agent", "get_run_journal", "lucy_activity", "lucy_browse",
	"lucy_check_heartbeat", "lucy_connect_email", "lucy_connect_mcp_server", "lucy_connect_service", "lucy_create_cron", "lucy_create_heartbeat",
	"lucy_current_time", "lucy_delete_cron", "lucy_delete_custom_integration", "lucy_delete_file",
	"lucy_delete_heartbeat", "lucy_disconnect_email", "lucy_disconnect_mcp_server", "lucy_disconnect_service", "lucy_edit_file", "lucy_forget",
	"lucy_generate_chart", "lucy_generate_csv", "lucy_generate_excel", "lucy_generate_pdf", "lucy_get_channel_history",
	"lucy_get_email_thread", "lucy_get_thread", "lucy_list_crons", "lucy_list_files", "lucy_list_heartbeats",
	"lucy_list_integrations", "lucy_list_slack_channels", "lucy_load_skill", "lucy_modify_cron", "lucy_pause_cron",
	"lucy_post_message", "lucy_read_emails", "lucy_read_file", "lucy_recall", "lucy_remember", "lucy_reply_to_email",
	"lucy_resolve_custom_integration", "lucy_resume_cron", "lucy_run_script", "lucy_save_skill", "lucy_search_emails",
	"lucy_search_files", "lucy_search_slack_history", "lucy_send_email", "lucy_set_spend_limit", "lucy_share_api_key", "lucy_sign_in_service", "lucy_spend_report", "lucy_store_api_key", "lucy_trigger_cron", "lucy_web_fetch",
	"lucy_web_search", "lucy_write_file", "update_run_journal",
}

// New binds every tool to its domain (it panics otherwise), and the catalogue is the full list.
func TestNewLinksEveryDomain(t *testing.T) {
	set := toolset.New(toolset.Deps{DataDir: t.TempDir(), Log: zerolog.Nop()})
	if set.Runner == nil {
		t.Fatal("New returned no Runner")
	}
	if got := tools.Names(); !slices.Equal(got, allTools) {
		t.Errorf("tools.Names() = %q\nwant %q", got, allTools)
	}
}

// Every tool the Runner executes is bound, and validates its arguments before any I/O; a builtin is
// refused.
func TestRunDispatch(t *testing.T) {
	r := toolset.New(toolset.Deps{DataDir: t.TempDir(), Log: zerolog.Nop()}).Runner
	for _, name := range tools.Names() {
		t.Run(name, func(t *testing.T) {
			s, _ := tools.Lookup(name)
			_, err := tooltest.Run(t, r, name, `[1]`)
			if s.Builtin {
				if !errors.Is(err, tools.ErrBuiltin) {
					t.Errorf("Run(builtin) error = %v, want ErrBuiltin", err)
				}
				return
			}
			tooltest.WantArgError(t, err, name, "must be a JSON object")
		})
	}
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// schemaKeywords are the JSON Schema keywords checkValue understands; a schema using another one
// would be described to the model but not enforced.
var schemaKeywords = map[string]bool{
	"type": true, "description": true, "properties": true, "required": true, "additionalProperties": true,
	"enum": true, "items": true, "minItems": true, "maxItems": true, "minLength": true, "maxLength": true,
	"minimum": true, "maximum": true, "minProperties": true,
}

func TestCatalogueInvariants(t *testing.T) {
	names := tools.Names()
	if !slices.IsSorted(names) {
		t.Errorf("Names() is not sorted: %v", names)
	}
	if len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("Names() has duplicates: %v", names)
	}
	wantBuiltins := []string{tools.AppendRunJournalEntry, tools.AskHuman, subagents.DelegateCode, subagents.DelegateDocument, subagents.DelegateIntegrations, subagents.DelegateResearch, tools.GetRunJournal, tools.UpdateRunJournal}
	var builtins []string
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			s, ok := tools.Lookup(name)
			if !ok {
				t.Fatalf("Lookup(%q) = false", name)
			}
			if s.Name != name {
				t.Errorf("Lookup(%q).Name = %q", name, s.Name)
			}
			if s.Description == "" || s.Human == "" {
				t.Errorf("description %q, human %q: both must be set", s.Description, s.Human)
			}
			if s.Human != strings.ToLower(s.Human[:1])+s.Human[1:] || !strings.HasSuffix(strings.Fields(s.Human)[0], "ing") {
				t.Errorf("Human = %q, want a lower-case gerund phrase like \"reading a web page\"", s.Human)
			}
			if s.Destructive && s.Idempotent {
				t.Errorf("destructive tool is marked idempotent: it would be retried")
			}
			if s.Destructive && s.Builtin {
				t.Errorf("destructive tool is builtin: the approval gate guards activities")
			}
			if s.Builtin {
				builtins = append(builtins, name)
			} else if !strings.HasPrefix(name, "lucy_") {
				t.Errorf("activity tool %q does not start with lucy_", name)
			}
			checkObjectSchema(t, s.Parameters)
		})
	}
	if !slices.Equal(builtins, wantBuiltins) {
		t.Errorf("builtins = %v, want %v", builtins, wantBuiltins)
	}

	def := tools.DefaultSet()
	if !slices.IsSorted(def) {
		t.Errorf("DefaultSet() is not sorted: %v", def)
	}
	for _, n := range def {
		if !slices.Contains(names, n) {
			t.Errorf("DefaultSet() has %q, which is not in the catalogue", n)
		}
	}
	if _, ok := tools.Lookup("lucy_nope"); ok {
		t.Errorf("Lookup(unknown) = true")
	}
}

func checkObjectSchema(t *testing.T, p map[string]any) {
	t.Helper()
	if p["type"] != "object" {
		t.Fatalf("parameters type = %v, want object", p["type"])
	}
	if p["additionalProperties"] != false {
		t.Errorf("additionalProperties = %v, want false", p["additionalProperties"])
	}
	props, ok := p["properties"].(map[string]any)
	if !ok {
		t.Fatalf("properties is %T, want map[string]any", p["properties"])
	}
	required, ok := p["required"].([]string)
	if !ok {
		t.Fatalf("required is %T, want []string", p["required"])
	}
	for _, r := range required {
		if _, ok := props[r]; !ok {
			t.Errorf("required field %q is not in properties", r)
		}
	}
	checkKeywords(t, "parameters", p)
	for name, v := range props {
		ps, ok := v.(map[string]any)
		if !ok {
			t.Errorf("property %q is %T", name, v)
			continue
		}
		if ps["type"] == nil || ps["description"] == nil {
			t.Errorf("property %q needs a type and a description: %v", name, ps)
		}
		checkKeywords(t, name, ps)
	}
}

func checkKeywords(t *testing.T, path string, s map[string]any) {
	t.Helper()
	for k, v := range s {
		if !schemaKeywords[k] {
			t.Errorf("%s uses keyword %q, which the validator does not enforce", path, k)
		}
		if k == "items" {
			checkKeywords(t, path+".items", v.(map[string]any))
		}
	}
}

// TestSchemasGolden pins what the model is told: a change to a description or schema shows in review.
// Run `go test ./tools/toolset -run TestSchemasGolden -update` after an intended change.
func TestSchemasGolden(t *testing.T) {
	r := toolset.New(toolset.Deps{DataDir: t.TempDir(), Log: zerolog.Nop()}).Runner
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

const testTeam = "TTEST"

// newTestSet is the Runner of every domain over a fresh data folder, without Slack or web search.
func newTestSet(tb testing.TB) *tools.Runner {
	tb.Helper()
	return toolset.New(toolset.Deps{DataDir: tb.TempDir(), Log: zerolog.Nop()}).Runner
}

func run(tb testing.TB, r *tools.Runner, name, args string) (tools.Output, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return r.Run(ctx, tools.Invocation{
		Name: name, Arguments: args, Team: testTeam, Channel: "CLOCAL", ThreadTS: "1700000000.000100",
		User: "ULOCAL", RunID: "lane:TTEST:CLOCAL:1700000000.000100/run-1", CallID: "call_1",
	})
}

func TestApprovalSummary(t *testing.T) {
	tests := []struct {
		name, tool, args     string
		summary, wantDetails string
	}{
		{"post by name", tools.PostMessage, `{"channel": "#general", "text": "Deploy at *5pm* today."}`,
			"post a message in #general", "Deploy at *5pm* today."},
		{"post by bare name", tools.PostMessage, `{"channel": "Random", "text": "hi"}`, "post a message in #random", "hi"},
		{"post by ID", tools.PostMessage, `{"channel": "C0123ABCD", "text": "hi"}`, "post a message in <#C0123ABCD>", "hi"},
		{"post by mention", tools.PostMessage, `{"channel": "<#C0123ABCD|general>", "text": "hi"}`, "post a message in <#C0123ABCD>", "hi"},
		{"post as DM", tools.PostMessage, `{"channel": "U0123ABCD", "text": "hi"}`, "post a message to <@U0123ABCD> as a direct message", "hi"},
		{"post keeps text exactly", tools.PostMessage, `{"text": "  line 1\nline 2  ", "channel": "#ops"}`,
			"post a message in #ops", "  line 1\nline 2  "},
		{"post without channel", tools.PostMessage, `{"text": "hi"}`, "post a message in an unnamed channel", "hi"},
		{"delete", tools.DeleteFile, `{"path": "reports/q3.md"}`, "delete the file reports/q3.md from the workspace", "reports/q3.md"},
		{"delete unreadable args", tools.DeleteFile, `{"path": `, "delete the file (no path given) from the workspace", "(no path given)"},
		{"other tool", tools.WriteFile, `{"path":"a.txt","content":"x"}`, "run lucy_write_file (writing a file)",
			"{\n  \"path\": \"a.txt\",\n  \"content\": \"x\"\n}"},
		{"unknown tool, bad JSON", "lucy_nope", `not json`, "run lucy_nope (lucy_nope)", "not json"},
		{"post masks credentials", tools.PostMessage, `{"channel": "#ops", "text": "use https://bob:hunter2@example.com/x?token=abc"}`,
			"post a message in #ops", "use https://REDACTED@example.com/x?token=REDACTED"},
		{"other tool masks credentials", tools.WebFetch, `{"url":"https://bob:hunter2@example.com/x?token=abc"}`,
			"run lucy_web_fetch (reading a web page)", "{\n  \"url\": \"https://REDACTED@example.com/x?token=REDACTED\"\n}"},
		{"bad JSON masks credentials", tools.WebFetch, `{"url":"https://bob:hunter2@example.com/`, "run lucy_web_fetch (reading a web page)",
			`{"url":"https://REDACTED@example.com/`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			summary, details := tools.ApprovalSummary(tt.tool, tt.args)
			if summary != tt.summary {
				t.Errorf("summary = %q, want %q", summary, tt.summary)
			}
			if details != tt.wantDetails {
				t.Errorf("details = %q, want %q", details, tt.wantDetails)
			}
		})
	}
}

func TestApprovalSummaryCoversDestructiveTools(t *testing.T) {
	for _, name := range tools.Names() {
		s, _ := tools.Lookup(name)
		if !s.Destructive {
			continue
		}
		summary, details := tools.ApprovalSummary(name, `{}`)
		if strings.HasPrefix(summary, "run ") || details == "" {
			t.Errorf("ApprovalSummary(%s) = %q, %q: no specific wording", name, summary, details)
		}
	}
}

func TestArgValidation(t *testing.T) {
	long := strings.Repeat("x", 513) // one more than the longest workspace path
	tests := []struct {
		tool, args string
		want       []string
	}{
		// Shapes every tool shares.
		{tools.WebFetch, `{"url": "https://example.com"`, []string{"not valid JSON", `{"url": "..."}`}},
		{tools.WebFetch, `"https://example.com"`, []string{"must be a JSON object"}},
		{tools.WebFetch, `{"url": "https://a.example"} {}`, []string{"unexpected data after the JSON object"}},
		{tools.WebFetch, `{"url": "https://a.example", "url": "https://b.example"}`, []string{`"url" is given twice`}},
		{tools.CurrentTime, `{"tz": "UTC"}`, []string{`unknown field "tz"`, "timezone"}},
		{tools.GetRunJournal, `{"all": true}`, []string{"takes no arguments", "{}"}},

		{tools.AppendRunJournalEntry, `{"section": "findings", "entry": "x"}`, []string{`"section" must be one of`, "verified_findings"}},
		{tools.AppendRunJournalEntry, `{"section": "decisions"}`, []string{`missing required field "entry"`}},
		{tools.AppendRunJournalEntry, `{"section": "decisions", "entry": ""}`, []string{`"entry" must not be empty`}},
		{tools.AskHuman, `{"question": 42}`, []string{`"question" must be a string (got the number 42)`}},
		{tools.AskHuman, `{"question": null}`, []string{`"question" must be a string (got null)`}},
		{tools.UpdateRunJournal, `{}`, []string{"give at least 1 of: objective, current_state, handoff_next_action"}},
		{tools.UpdateRunJournal, `{"objective": null}`, []string{"give at least 1 of"}},
		{tools.UpdateRunJournal, `{"objective": ["a"]}`, []string{`"objective" must be a string (got an array)`}},
		{tools.CurrentTime, `{"timezone": "Mars/Olympus_Mons"}`, []string{"not an IANA time zone", "America/New_York"}},
		{tools.CurrentTime, `{"timezone": "Local"}`, []string{"not an IANA time zone"}},
		{tools.DeleteFile, `{}`, []string{`missing required field "path" (string)`, `Example: {"path": "..."}`}},
		{tools.DeleteFile, `{"path": "../secrets.txt"}`, []string{`uses ".."`}},
		{tools.EditFile, `{"path": "a.txt", "old": "x"}`, []string{`missing required field "new"`}},
		{tools.EditFile, `{"path": "a.txt", "old": "", "new": "y"}`, []string{`"old" must not be empty`}},
		{tools.EditFile, `{"path": "a.txt", "old": "same", "new": "same"}`, []string{"are the same"}},
		{tools.GenerateCSV, `{"filename": "a.csv"}`, []string{`missing required field "rows"`}},
		{tools.GenerateCSV, `{"filename": "a.csv", "rows": []}`, []string{`"rows" must have at least 1 item`}},
		{tools.GenerateCSV, `{"filename": "a.csv", "rows": ["a,b"]}`, []string{`"rows[0]" must be an array (got the string "a,b")`}},
		{tools.GenerateCSV, `{"filename": "a.csv", "rows": [["a", 1]]}`, []string{`"rows[0][1]" must be a string (got the number 1)`}},
		{tools.GenerateCSV, `{"filename": "a.csv", "rows": [[]]}`, []string{"every row is empty"}},
		{tools.GenerateCSV, `{"filename": "/tmp/a.csv", "rows": [["a"]]}`, []string{"absolute path"}},
		{schedules.CreateCron, `{"name":"x","schedule":"0 9 * * *"}`, []string{`missing required field "instruction"`}},
		{schedules.CreateCron, `{"name":"!!!","schedule":"0 9 * * *","instruction":"x"}`, []string{"not a usable name"}},
		{schedules.CreateCron, `{"name":"x","schedule":"every day","instruction":"x"}`, []string{"a cron expression has 5"}},
		{schedules.CreateCron, `{"name":"x","schedule":"0 9 * * *","instruction":"x","in_this_thread":"yes"}`, []string{`"in_this_thread" must be true or false`}},
		{schedules.ListCrons, `{"all": true}`, []string{`"all"`}},
		{skills.LoadTool, `{}`, []string{`missing required field "name"`}},
		{spend.SetLimitTool, `{"budget": "team_weekly", "limit": "50"}`, []string{`"budget" must be one of`, "team_daily"}},
		{spend.SetLimitTool, `{"budget": "team_daily", "limit": "lots"}`, []string{"neither dollars", "2M tokens"}},
		{spend.SetLimitTool, `{"budget": "team_daily"}`, []string{`missing required field "limit"`}},
		{spend.ReportTool, `{"month": "Nov"}`, []string{"not yyyy-mm"}},
		{skills.LoadTool, `{"name": "Weekly Report"}`, []string{"lowercase letters, digits and single hyphens"}},
		{skills.SaveTool, `{"name": "weekly-report", "description": "d"}`, []string{`missing required field "instructions"`}},
		{skills.SaveTool, `{"name": "weekly_report", "description": "d", "instructions": "x"}`, []string{"lowercase letters, digits and single hyphens"}},
		{skills.SaveTool, `{"name": "weekly-report", "description": "d", "instructions": "x", "replace": true}`, []string{`unknown field "replace"`}},
		{schedules.ModifyCron, `{"name":"x"}`, []string{"at least 2"}},
		{schedules.DeleteCron, `{}`, []string{`missing required field "name"`}},
		{schedules.TriggerCron, `{"name": 3}`, []string{`"name" must be a string`}},
		{schedules.PauseCron, `{"name":"x","reason":7}`, []string{`"reason" must be a string`}},
		{schedules.ResumeCron, `{"name":""}`, []string{`"name" must not be empty`}},
		{documents.GenerateExcel, `{"filename": "a.xlsx"}`, []string{`missing required field "sheets"`}},
		{documents.GeneratePDF, `{"markdown": "x"}`, []string{`missing required field "filename"`}},
		{documents.GenerateChart, `{"filename": "c.png", "type": "bar", "labels": ["a"], "series": [{"values": [1]}]}`, []string{`missing the field "name"`}},
		{tools.WebSearch, `{"query": "x", "count": 11}`, []string{`"count" must be at most 10`}},
		{tools.SearchSlackHistory, `{}`, []string{`missing required field "query"`}},
		{schedules.CreateHeartbeat, `{"name": "x", "kind": "http"}`, []string{`missing required field "url"`}},
		{schedules.ListHeartbeats, `{"x": 1}`, []string{`"x"`}},
		{schedules.DeleteHeartbeat, `{}`, []string{`missing required field "name"`}},
		{schedules.CheckHeartbeat, `{"name": "x", "kind": "http"}`, []string{`"kind"`}},
		{tools.RunScript, `{}`, []string{`missing required field "code"`}},
		{tools.RunScript, `{"code": "1", "language": "ruby"}`, []string{`"language"`}},
		{subagents.DelegateResearch, `{}`, []string{`missing required field "task"`}},
		{subagents.DelegateCode, `{"task": ""}`, []string{`"task" must not be empty`}},
		{subagents.DelegateDocument, `{"task": "a report", "context": 7}`, []string{`"context" must be a string`}},
		{subagents.DelegateIntegrations, `{"task": "post it", "channel": "C1"}`, []string{`"channel"`}},
		{tools.GetChannelHistory, `{}`, []string{`missing required field "channel"`}},
		{tools.GetChannelHistory, `{"channel": "C1", "limit": 500}`, []string{`"limit" must be at most 100 (got 500)`}},
		{tools.GetChannelHistory, `{"channel": "C1", "limit": 0}`, []string{`"limit" must be at least 1`}},
		{tools.GetChannelHistory, `{"channel": "C1", "limit": 2.5}`, []string{`"limit" must be a whole number`}},
		{tools.GetChannelHistory, `{"channel": "C1", "limit": "20"}`, []string{`"limit" must be an integer (got the string "20")`}},
		{tools.GetThread, `{"channel": "C1"}`, []string{`missing required field "ts"`}},
		{tools.GetThread, `{"channel": "C1", "ts": "yesterday"}`, []string{"not a Slack message ts", "1714572202.000100"}},
		{tools.ListFiles, `{"path": "/etc"}`, []string{"absolute path"}},
		{filesearch.SearchFiles, `{}`, []string{`missing required field "query"`}},
		{filesearch.SearchFiles, `{"query": ""}`, []string{`"query" must not be empty`}},
		{filesearch.SearchFiles, `{"query": "the of"}`, []string{"no words to search for"}},
		{filesearch.SearchFiles, `{"query": "budget", "folder": "../x"}`, []string{`uses ".."`}},
		{filesearch.SearchFiles, `{"query": "budget", "limit": 31}`, []string{`"limit"`}},
		{tools.ListFiles, `{"path": "a/../../b"}`, []string{`uses ".."`}},
		{tools.ListSlackChannels, `{"query": 7}`, []string{`"query" must be a string`}},
		{tools.PostMessage, `{"channel": "#general"}`, []string{`missing required field "text"`}},
		{tools.PostMessage, `{"channel": "#general", "text": "   "}`, []string{`"text" is blank`}},
		{tools.PostMessage, `{"channel": "#general", "text": "` + strings.Repeat("a", tools.MaxMessageChars+1) + `"}`, []string{`"text" is too long`}},
		{tools.ReadFile, `{"path": ""}`, []string{`"path" must not be empty`}},
		{tools.ReadFile, `{"path": "` + long + `"}`, []string{`"path" is too long`}},
		{tools.ReadFile, `{"path": "a.txt", "offset": -1}`, []string{`"offset" must be at least 0`}},
		{tools.ReadFile, `{"path": "C:\\Users\\x.txt"}`, []string{"forward slashes"}},
		{tools.ReadFile, `{"path": "~/notes.txt"}`, []string{"absolute path"}},
		{tools.WebFetch, `{}`, []string{`missing required field "url"`}},
		{tools.WebFetch, `{"url": "ftp://example.com/file"}`, []string{"not an absolute http or https URL"}},
		{tools.WebFetch, `{"url": "example.com"}`, []string{"not an absolute http or https URL"}},
		{tools.WebFetch, `{"url": "file:///etc/passwd"}`, []string{"not an absolute http or https URL"}},
		{browser.Browse, `{}`, []string{`missing required field "url"`}},
		{browser.Browse, `{"url": "file:///etc/passwd"}`, []string{"not an absolute http or https URL"}},
		{browser.Browse, `{"url": "https://example.com", "steps": [{"action": "drag", "selector": "a", "text": ""}]}`, []string{"must be one of"}},
		{browser.Browse, `{"url": "https://example.com", "steps": [{"action": "fill_secret", "selector": "#pw", "text": ""}]}`, []string{"name of a stored key", "never the key itself"}},
		{browser.Browse, `{"url": "https://example.com", "steps": [{"action": "press", "selector": "", "text": "Ctrl+C"}]}`, []string{"cannot press", "Enter, Tab"}},
		{browser.Browse, `{"url": "https://example.com", "steps": [{"action": "select", "selector": "#c", "text": ""}]}`, []string{"needs the option's value or visible text"}},
		{browser.Browse, `{"url": "https://example.com", "steps": [{"action": "hover", "selector": "", "text": ""}]}`, []string{"needs a selector"}},
		{browser.Browse, `{"url": "https://example.com", "end_session": true}`, []string{"end_session needs the session's name"}},
		{browser.Browse, `{"url": "https://example.com", "session": "my portal!"}`, []string{"is not a session name"}},
		{browser.Browse, `{"url": "https://example.com", "steps": [{"action": "click", "selector": "", "text": ""}]}`, []string{"needs a selector"}},
		{tools.WriteFile, `{"path": "a.txt"}`, []string{`missing required field "content"`}},
		{tools.WriteFile, `{"path": ".", "content": "x"}`, []string{"give the path of a file"}},
		{tools.WriteFile, `{"path": "a/.lucy-tmp-x", "content": "x"}`, []string{"reserved"}},
		{openapi.ResolveTool, `{"url": 5}`, []string{`"url" must be a string`}},
		{openapi.ResolveTool, `{"url": "https://a.example/o.json", "operations": "pets"}`, []string{`"operations" must be an array`}},
		{openapi.ResolveTool, `{}`, []string{"exactly one of url"}},
		{openapi.DeleteTool, `{}`, []string{`missing required field "name"`}},
		{integrations.StoreAPIKey, `{"service": "github"}`, []string{`missing required field "purpose"`}},
		{integrations.StoreAPIKey, `{"service": "git hub", "purpose": "x"}`, []string{"not a key name"}},
		{integrations.StoreAPIKey, `{"service": "github", "purpose": "x", "key": "sk-1"}`, []string{`unknown field "key"`}},
		{integrations.ShareAPIKey, `{"service": "github", "with": "everyone"}`, []string{"with"}},
		{integrations.ShareAPIKey, `{"with": "team"}`, []string{`missing required field "service"`}},
		{memory.RememberTool, `{"scope": "workspace"}`, []string{`missing required field "note"`}},
		{memory.RememberTool, `{"scope": "client", "note": "x"}`, []string{`"scope" must be one of`}},
		{memory.RememberTool, `{"scope": "entity", "note": "x"}`, []string{"entity's name"}},
		{memory.RecallTool, `{"scopes": ["planet"]}`, []string{"must be one of"}},
		{memory.ForgetTool, `{}`, []string{"give at least 1 of: id, query"}},
		{integrations.ListIntegrations, `{"all": true}`, []string{`"all"`}},
		{mcp.ConnectServer, `{"name": "gh"}`, []string{`missing required field "url"`}},
		{mcp.ConnectServer, `{"name": "gh", "url": "https://mcp.example.com/mcp", "credential": "Not A Name!"}`, []string{"not a credential name"}},
		{mcp.DisconnectServer, `{}`, []string{`missing required field "name"`}},
		{catalog.ConnectService, `{"share_with_team": true}`, []string{`missing required field "service"`}},
		{email.ConnectEmail, `{"imap_host": "imap.example.com", "smtp_host": "smtp.example.com"}`, []string{`missing required field "address"`}},
		{email.ConnectEmail, `{"address": "a@example.com", "auth": "oauth"}`, []string{`"auth" must be one of`}},
		{mcp.SignInService, `{}`, []string{`missing required field "service"`}},
		{mcp.DisconnectService, `{"service": "linear", "team_wide": "yes"}`, []string{"team_wide"}},
		{email.ConnectEmail, `{"address": "a@example.com", "imap_host": "i.example.com", "smtp_host": "s.example.com", "imap_tls": "ssl"}`, []string{`"imap_tls" must be one of`}},
		{email.DisconnectEmail, `{}`, []string{`missing required field "mailbox"`}},
		{email.ReadEmails, `{"limit": 100}`, []string{`"limit"`}},
		{email.SearchEmails, `{"since": "2026-11-01", "limit": 0}`, []string{`"limit"`}},
		{email.GetEmailThread, `{}`, []string{`missing required field "message_id"`}},
		{email.SendEmail, `{"to": [], "subject": "s", "body": "b"}`, []string{`"to" must have at least 1 item`}},
		{email.SendEmail, `{"to": ["a@example.com"], "body": "b"}`, []string{`missing required field "subject"`}},
		{email.ReplyToEmail, `{"message_id": "x@y", "to": ["a@example.com"]}`, []string{`missing required field "body"`}},
		{activitylog.Name, `{"kind": "mail"}`, []string{`"kind" must be one of`, "email"}},
		{activitylog.Name, `{"since": "last week"}`, []string{"since", "not a date", "2026-11-21"}},
		{activitylog.Name, `{"since": "2026-01-01", "until": "2026-11-01"}`, []string{"longer than 92 days"}},
		{activitylog.Name, `{"since": "2026-11-02", "until": "2026-11-01"}`, []string{"must be before until"}},
		{activitylog.Name, `{"person": "alice"}`, []string{"not a Slack user ID", "me"}},
		{activitylog.Name, `{"channel": "#general"}`, []string{"not a conversation ID", "here"}},
	}
	r := newTestSet(t) // no Slack: the arguments must be refused before any client is needed
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.tool] = true
		t.Run(tt.tool, func(t *testing.T) {
			var err error
			if s, _ := tools.Lookup(tt.tool); s.Builtin {
				err = tools.ValidateArgs(tt.tool, tt.args)
			} else {
				_, err = run(t, r, tt.tool, tt.args)
			}
			wantArgError(t, err, tt.tool, tt.want...)
		})
	}
	for _, name := range tools.Names() {
		if !seen[name] {
			t.Errorf("no argument validation case for %s", name)
		}
	}
}

func TestValidateArgsAccepts(t *testing.T) {
	tests := []struct{ tool, args string }{
		{tools.GetRunJournal, ``},
		{tools.GetRunJournal, `null`},
		{tools.GetRunJournal, ` {} `},
		{tools.UpdateRunJournal, `{"current_state": "reading the docs"}`},
		{tools.UpdateRunJournal, `{"objective": "ship", "current_state": null}`},
		{tools.AppendRunJournalEntry, `{"entry": "X is idempotent", "section": "verified_findings"}`},
		{tools.AskHuman, `{"question": "Which quarter?"}`},
		{tools.GetChannelHistory, `{"channel": "C1", "limit": 20}`},
		{tools.ReadFile, `{"path": "a.txt", "offset": null}`},
	}
	for _, tt := range tests {
		if err := tools.ValidateArgs(tt.tool, tt.args); err != nil {
			t.Errorf("ValidateArgs(%s, %s) = %v, want nil", tt.tool, tt.args, err)
		}
	}
	if err := tools.ValidateArgs("nope", `{}`); err == nil {
		t.Errorf("ValidateArgs(unknown tool) = nil")
	}
}

func TestSchemas(t *testing.T) {
	r := newTestSet(t)
	got := r.Schemas(t.Context(), testTeam, []string{tools.WebFetch, "nope", tools.AskHuman, tools.ReadFile})
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if want := []string{tools.WebFetch, tools.AskHuman, tools.ReadFile}; !slices.Equal(names, want) {
		t.Errorf("Schemas names = %v, want %v", names, want)
	}
	if len(r.Schemas(t.Context(), testTeam, nil)) != 0 {
		t.Errorf("Schemas(nil) is not empty")
	}
}

// wantArgError checks that err is an *tools.ArgError for tool whose message holds every want.
func wantArgError(tb testing.TB, err error, tool string, want ...string) {
	tb.Helper()
	var argErr *tools.ArgError
	if !errors.As(err, &argErr) {
		tb.Fatalf("got error %v (%T), want *tools.ArgError", err, err)
	}
	if argErr.Tool != tool {
		tb.Errorf("ArgError.Tool = %q, want %q", argErr.Tool, tool)
	}
	for _, w := range want {
		if !strings.Contains(argErr.Msg, w) {
			tb.Errorf("ArgError %q does not contain %q", argErr.Msg, w)
		}
	}
}

// A worker without a browser (LUCY_CHROMIUM names none, and so would a machine without chromium on
// PATH) does not offer lucy_browse; the other tools are offered as ever.
func TestBrowseNotOfferedWithoutChromium(t *testing.T) {
	r := toolset.New(toolset.Deps{DataDir: t.TempDir(), Log: zerolog.Nop(), Chromium: "/nonexistent/chromium"}).Runner
	var names []string
	for _, s := range r.Available(t.Context(), testTeam, "U1") {
		names = append(names, s.Name)
	}
	if slices.Contains(names, browser.Browse) {
		t.Errorf("%s is offered without a browser", browser.Browse)
	}
	if !slices.Contains(names, tools.WebFetch) {
		t.Errorf("%s is not offered: %q", tools.WebFetch, names)
	}
}
