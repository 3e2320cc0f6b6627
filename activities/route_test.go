package activities

import (
	"context"
	"slices"
	"testing"

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
		if got != (ToolFlags{Name: name, Idempotent: s.Idempotent, Destructive: s.Destructive, Builtin: s.Builtin, Long: s.Long}) {
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
func TestToolFlags(t *testing.T) {
	got := toolFlags([]string{tools.ReadFile, "no_such_tool", tools.AskHuman})
	var names []string
	for _, f := range got {
		names = append(names, f.Name)
	}
	want := []string{tools.ReadFile, tools.AskHuman, tools.GetRunJournal, tools.UpdateRunJournal, tools.AppendRunJournalEntry}
	if !slices.Equal(names, want) {
		t.Fatalf("toolFlags = %v, want %v", names, want)
	}
	if !got[0].Idempotent {
		t.Errorf("%s recorded as not idempotent", tools.ReadFile)
	}
}

func dedupe(names []string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}
