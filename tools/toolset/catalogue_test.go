package toolset

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

	"github.com/lucy-agent/lucy/tools"
)

// The tests of the whole catalogue: they need every domain linked, which only this package does.

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const testTeam = "TTEST"

// newTestSet is the Runner of every domain over a fresh data folder, without Slack or web search.
func newTestSet(tb testing.TB) *tools.Runner {
	tb.Helper()
	return New(Deps{DataDir: tb.TempDir(), Log: zerolog.Nop()}).Runner
}

// run calls the tool with args in the test team's conversation.
func run(tb testing.TB, r *tools.Runner, name, args string) (tools.Output, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return r.Run(ctx, tools.Invocation{
		Name: name, Arguments: args, Team: testTeam, Channel: "CLOCAL", ThreadTS: "1700000000.000100",
		User: "ULOCAL", RunID: "lane:TTEST:CLOCAL:1700000000.000100/run-1", CallID: "call_1",
	})
}

// wantArgError checks that err is an *ArgError for tool whose message contains every want.
func wantArgError(tb testing.TB, err error, tool string, want ...string) {
	tb.Helper()
	var argErr *tools.ArgError
	if !errors.As(err, &argErr) {
		tb.Fatalf("got error %v (%T), want *ArgError", err, err)
	}
	if argErr.Tool != tool {
		tb.Errorf("ArgError.Tool = %q, want %q", argErr.Tool, tool)
	}
	for _, w := range want {
		if !strings.Contains(argErr.Msg, w) {
			tb.Errorf("message does not contain %q:\n%s", w, argErr.Msg)
		}
	}
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

// Every destructive tool gets its own wording: the generic "run <tool>" would ask a person to approve
// something they cannot judge.
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

// TestArgValidation covers, for every tool, the mistakes a model makes: each must come back as an
// *ArgError whose message names the problem.
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
		{tools.CreateCron, `{"name":"x","schedule":"0 9 * * *"}`, []string{`missing required field "instruction"`}},
		{tools.CreateCron, `{"name":"!!!","schedule":"0 9 * * *","instruction":"x"}`, []string{"not a usable name"}},
		{tools.CreateCron, `{"name":"x","schedule":"every day","instruction":"x"}`, []string{"a cron expression has 5"}},
		{tools.CreateCron, `{"name":"x","schedule":"0 9 * * *","instruction":"x","in_this_thread":"yes"}`, []string{`"in_this_thread" must be true or false`}},
		{tools.ListCrons, `{"all": true}`, []string{`"all"`}},
		{tools.ModifyCron, `{"name":"x"}`, []string{"at least 2"}},
		{tools.DeleteCron, `{}`, []string{`missing required field "name"`}},
		{tools.TriggerCron, `{"name": 3}`, []string{`"name" must be a string`}},
		{tools.PauseCron, `{"name":"x","reason":7}`, []string{`"reason" must be a string`}},
		{tools.ResumeCron, `{"name":""}`, []string{`"name" must not be empty`}},
		{tools.GenerateExcel, `{"filename": "a.xlsx"}`, []string{`missing required field "sheets"`}},
		{tools.GeneratePDF, `{"markdown": "x"}`, []string{`missing required field "filename"`}},
		{tools.GenerateChart, `{"filename": "c.png", "type": "bar", "labels": ["a"], "series": [{"values": [1]}]}`, []string{`missing the field "name"`}},
		{tools.WebSearch, `{"query": "x", "count": 11}`, []string{`"count" must be at most 10`}},
		{tools.SearchSlackHistory, `{}`, []string{`missing required field "query"`}},
		{tools.CreateHeartbeat, `{"name": "x", "kind": "http"}`, []string{`missing required field "url"`}},
		{tools.ListHeartbeats, `{"x": 1}`, []string{`"x"`}},
		{tools.DeleteHeartbeat, `{}`, []string{`missing required field "name"`}},
		{tools.CheckHeartbeat, `{"name": "x", "kind": "http"}`, []string{`"kind"`}},
		{tools.RunScript, `{}`, []string{`missing required field "code"`}},
		{tools.DelegateResearch, `{}`, []string{`missing required field "task"`}},
		{tools.DelegateCode, `{"task": ""}`, []string{`"task" must not be empty`}},
		{tools.DelegateDocument, `{"task": "a report", "context": 7}`, []string{`"context" must be a string`}},
		{tools.DelegateIntegrations, `{"task": "post it", "channel": "C1"}`, []string{`"channel"`}},
		{tools.GetChannelHistory, `{}`, []string{`missing required field "channel"`}},
		{tools.GetChannelHistory, `{"channel": "C1", "limit": 500}`, []string{`"limit" must be at most 100 (got 500)`}},
		{tools.GetChannelHistory, `{"channel": "C1", "limit": 0}`, []string{`"limit" must be at least 1`}},
		{tools.GetChannelHistory, `{"channel": "C1", "limit": 2.5}`, []string{`"limit" must be a whole number`}},
		{tools.GetChannelHistory, `{"channel": "C1", "limit": "20"}`, []string{`"limit" must be an integer (got the string "20")`}},
		{tools.GetThread, `{"channel": "C1"}`, []string{`missing required field "ts"`}},
		{tools.GetThread, `{"channel": "C1", "ts": "yesterday"}`, []string{"not a Slack message ts", "1714572202.000100"}},
		{tools.ListFiles, `{"path": "/etc"}`, []string{"absolute path"}},
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
		{tools.WriteFile, `{"path": "a.txt"}`, []string{`missing required field "content"`}},
		{tools.WriteFile, `{"path": ".", "content": "x"}`, []string{"give the path of a file"}},
		{tools.WriteFile, `{"path": "a/.lucy-tmp-x", "content": "x"}`, []string{"reserved"}},
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

// TestSchemasGolden pins what the model is told: a change to a description or schema shows in review.
// Run `go test ./tools/toolset -run TestSchemasGolden -update` after an intended change.
func TestSchemasGolden(t *testing.T) {
	r := newTestSet(t)
	got, err := json.MarshalIndent(r.Schemas(t.Context(), testTeam, tools.Names()), "", "  ")
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

func TestRunDispatch(t *testing.T) {
	r := newTestSet(t)
	for _, name := range tools.Names() {
		t.Run(name, func(t *testing.T) {
			s, _ := tools.Lookup(name)
			_, err := run(t, r, name, `[1]`)
			if s.Builtin {
				if !errors.Is(err, tools.ErrBuiltin) {
					t.Errorf("Run(builtin) error = %v, want tools.ErrBuiltin", err)
				}
				return
			}
			// Every activity tool is implemented and validates its arguments before any I/O.
			wantArgError(t, err, name, "must be a JSON object")
		})
	}
	_, err := run(t, r, "lucy_send_email", `{}`)
	wantArgError(t, err, "lucy_send_email", "there is no tool named", tools.WebFetch)
}
