package activities

import (
	"context"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/tools"
)

// Route records the flags of every tool it offers and of the builtins, and the tool-call limit, so
// that the workflow decides by what was true when the run started.
func TestRouteRecordsToolFlagsAndLimit(t *testing.T) {
	a := &Activities{MaxToolCalls: 7}
	r, err := a.Route(context.Background(), RouteInput{Text: "delete report.csv"})
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxToolCalls != 7 {
		t.Errorf("MaxToolCalls = %d, want 7 (from LUCY_MAX_TOOL_CALLS)", r.MaxToolCalls)
	}
	byName := map[string]ToolFlags{}
	for _, f := range r.Specs {
		if _, dup := byName[f.Name]; dup {
			t.Errorf("%s recorded twice", f.Name)
		}
		byName[f.Name] = f
	}
	want := append(append([]string{}, r.Tools...), tools.AskHuman, tools.GetRunJournal, tools.UpdateRunJournal, tools.AppendRunJournalEntry)
	for _, name := range want {
		s, ok := tools.Lookup(name)
		if !ok {
			t.Fatalf("%s is not in the catalogue", name)
		}
		got, ok := byName[name]
		if !ok {
			t.Errorf("no flags recorded for %s", name)
			continue
		}
		if got != (ToolFlags{Name: name, Idempotent: s.Idempotent, Destructive: s.Destructive, Builtin: s.Builtin, Long: s.Long, Quick: s.Quick,
			ChecksFirst: s.ChecksFirst, Human: s.Human, Schema: tools.SchemaDigest(s)}) {
			t.Errorf("flags of %s = %+v, catalogue says %+v", name, got, s)
		}
	}
	if len(byName) != len(dedupe(want)) {
		t.Errorf("%d tools recorded, want %d", len(byName), len(dedupe(want)))
	}
	// The recorded flags are the catalogue's: a destructive tool is marked so.
	if !byName[tools.DeleteFile].Destructive || !byName[tools.AskHuman].Builtin || !byName[tools.WebFetch].Long {
		t.Errorf("flags lost: delete %+v, ask_human %+v, web fetch %+v", byName[tools.DeleteFile], byName[tools.AskHuman], byName[tools.WebFetch])
	}
}

// Builtins are recorded even when the offered set lacks them; names the catalogue does not know are
// left out rather than recorded with made-up flags.
func TestRouteRecordsASubAgentsToolsAndTheBuiltins(t *testing.T) {
	a := &Activities{Log: zerolog.Nop()}
	got, err := a.Route(t.Context(), RouteInput{Tools: []string{tools.ReadFile, "no_such_tool", tools.AskHuman}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{tools.ReadFile, tools.AskHuman}; !slices.Equal(got.Tools, want) {
		t.Errorf("tools = %v, want %v", got.Tools, want)
	}
	var names []string
	for _, f := range got.Specs {
		names = append(names, f.Name)
	}
	want := []string{tools.ReadFile, tools.AskHuman, tools.GetRunJournal, tools.UpdateRunJournal, tools.AppendRunJournalEntry}
	if !slices.Equal(names, want) {
		t.Fatalf("flags recorded for %v, want %v", names, want)
	}
	if !got.Specs[0].Idempotent {
		t.Errorf("%s recorded as not idempotent", tools.ReadFile)
	}
}

// A team's run-time source: its tools are offered after the compiled-in ones and their flags are
// recorded, so that the workflow decides by what the run was offered, not by what the source lists
// later.
func TestRouteOffersAndRecordsASourcesTools(t *testing.T) {
	src := teamSource{team: "T1", tools: []tools.Tool{
		{Spec: tools.Spec{Name: "mcp__crm__delete_contact", Description: "Delete a contact.", Destructive: true, Human: "deleting a contact in the CRM",
			Parameters: map[string]any{"type": "object"}}, Run: func(context.Context, tools.Invocation) (tools.Output, error) { return tools.Output{}, nil }},
		{Spec: tools.Spec{Name: "mcp__crm__find_contact", Description: "Find a contact.", Idempotent: true,
			Parameters: map[string]any{"type": "object"}}, Run: func(context.Context, tools.Invocation) (tools.Output, error) { return tools.Output{}, nil }},
	}}
	a := &Activities{Tools: testRunner(t, testDeps{DataDir: t.TempDir()}, src), Log: zerolog.Nop()}
	got, err := a.Route(t.Context(), RouteInput{Text: "find Ada in the CRM", Team: "T1"})
	if err != nil {
		t.Fatal(err)
	}
	n := len(got.Tools)
	if want := []string{"mcp__crm__delete_contact", "mcp__crm__find_contact"}; n < 2 || !slices.Equal(got.Tools[n-2:], want) {
		t.Fatalf("tools end with %v, want the source's %v after the compiled-in ones", got.Tools, want)
	}
	flags := map[string]ToolFlags{}
	for _, f := range got.Specs {
		flags[f.Name] = f
	}
	if !flags["mcp__crm__delete_contact"].Destructive || !flags["mcp__crm__find_contact"].Idempotent {
		t.Errorf("the source's flags were not recorded: %+v", got.Specs)
	}
	// Its declaration as offered: the words its source gives it and the digest of its schema, which
	// the workflow passes with each call (ExecuteToolInput.Schema).
	if f := flags["mcp__crm__delete_contact"]; f.Human != "deleting a contact in the CRM" || f.Schema != tools.SchemaDigest(src.tools[0].Spec) {
		t.Errorf("the source tool's declaration was not recorded: %+v", f)
	}
	other, err := a.Route(t.Context(), RouteInput{Text: "find Ada", Team: "T2"})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(other.Tools, "mcp__crm__find_contact") {
		t.Errorf("another team was offered T1's source tools: %v", other.Tools)
	}
}

// A sub-agent whose row lists tools.SourceTools is offered what the team's sources offer, with their
// flags recorded; another team's sub-agent is offered none of them.
func TestSubAgentRouteExpandsTheTeamsSourceTools(t *testing.T) {
	src := teamSource{team: "T1", tools: []tools.Tool{
		{Spec: tools.Spec{Name: "lucy_custom_crm_delete_contact", Description: "Delete a contact.", Destructive: true,
			Parameters: map[string]any{"type": "object"}}, Run: func(context.Context, tools.Invocation) (tools.Output, error) { return tools.Output{}, nil }},
	}}
	a := &Activities{Tools: testRunner(t, testDeps{DataDir: t.TempDir()}, src), Log: zerolog.Nop()}
	got, err := a.Route(t.Context(), RouteInput{Text: "clean up the CRM", Team: "T1", Tools: []string{tools.CurrentTime, tools.SourceTools}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{tools.CurrentTime, "lucy_custom_crm_delete_contact"}; !slices.Equal(got.Tools, want) {
		t.Fatalf("tools %v, want %v", got.Tools, want)
	}
	if i := slices.IndexFunc(got.Specs, func(f ToolFlags) bool { return f.Name == "lucy_custom_crm_delete_contact" }); i < 0 || !got.Specs[i].Destructive {
		t.Errorf("the source tool's flags were not recorded: %+v", got.Specs)
	}
	other, err := a.Route(t.Context(), RouteInput{Text: "clean up", Team: "T2", Tools: []string{tools.CurrentTime, tools.SourceTools}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{tools.CurrentTime}; !slices.Equal(other.Tools, want) {
		t.Errorf("another team's sub-agent got %v, want %v", other.Tools, want)
	}
}

// teamSource offers its tools to one team.
type teamSource struct {
	team  string
	tools []tools.Tool
}

func (s teamSource) Tools(_ context.Context, team string) ([]tools.Tool, error) {
	if team != s.team {
		return nil, nil
	}
	return s.tools, nil
}

func dedupe(names []string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}
