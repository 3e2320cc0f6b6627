package toolset_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/sandbox"
	"github.com/lucy-agent/lucy/subagents"
	"github.com/lucy-agent/lucy/tools"
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
	"delegate_to_integrations_agent", "delegate_to_research_agent", "get_run_journal",
	"lucy_check_heartbeat", "lucy_create_cron", "lucy_create_heartbeat", "lucy_current_time", "lucy_delete_cron",
	"lucy_delete_file", "lucy_delete_heartbeat", "lucy_edit_file", "lucy_generate_chart", "lucy_generate_csv",
	"lucy_generate_excel", "lucy_generate_pdf", "lucy_get_channel_history", "lucy_get_thread", "lucy_list_crons",
	"lucy_list_files", "lucy_list_heartbeats", "lucy_list_slack_channels", "lucy_modify_cron", "lucy_pause_cron",
	"lucy_post_message", "lucy_read_file", "lucy_resume_cron", "lucy_run_script", "lucy_search_slack_history",
	"lucy_trigger_cron", "lucy_web_fetch", "lucy_web_search", "lucy_write_file", "update_run_journal",
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
