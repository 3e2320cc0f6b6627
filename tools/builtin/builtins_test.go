package builtin

import (
	"slices"
	"testing"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
)

// The builtins are declared (the workflow reads their flags and validates their arguments with
// tools.ValidateArgs), and refused by the Runner.
func TestBuiltinsAreDeclared(t *testing.T) {
	for _, name := range []string{tools.AppendRunJournalEntry, tools.AskHuman, tools.GetRunJournal, tools.UpdateRunJournal} {
		s, ok := tools.Lookup(name)
		if !ok || !s.Builtin {
			t.Errorf("Lookup(%s) = %+v, %v: want a builtin", name, s, ok)
		}
		if !slices.Contains(tools.DefaultSet(), name) {
			t.Errorf("%s is not offered by default", name)
		}
	}
}

func TestBuiltinArgValidation(t *testing.T) {
	tests := []struct {
		tool, args string
		want       []string
	}{
		{tools.GetRunJournal, `{"all": true}`, []string{"takes no arguments", "{}"}},
		{tools.AppendRunJournalEntry, `{"section": "findings", "entry": "x"}`, []string{`"section" must be one of`, "verified_findings"}},
		{tools.AppendRunJournalEntry, `{"section": "decisions"}`, []string{`missing required field "entry"`}},
		{tools.AppendRunJournalEntry, `{"section": "decisions", "entry": ""}`, []string{`"entry" must not be empty`}},
		{tools.AskHuman, `{"question": 42}`, []string{`"question" must be a string (got the number 42)`}},
		{tools.AskHuman, `{"question": null}`, []string{`"question" must be a string (got null)`}},
		{tools.UpdateRunJournal, `{}`, []string{"give at least 1 of: objective, current_state, handoff_next_action"}},
		{tools.UpdateRunJournal, `{"objective": null}`, []string{"give at least 1 of"}},
		{tools.UpdateRunJournal, `{"objective": ["a"]}`, []string{`"objective" must be a string (got an array)`}},
	}
	for _, tt := range tests {
		tooltest.WantArgError(t, tools.ValidateArgs(tt.tool, tt.args), tt.tool, tt.want...)
	}
	for _, tt := range []struct{ tool, args string }{
		{tools.GetRunJournal, ``},
		{tools.GetRunJournal, `null`},
		{tools.GetRunJournal, ` {} `},
		{tools.UpdateRunJournal, `{"current_state": "reading the docs"}`},
		{tools.UpdateRunJournal, `{"objective": "ship", "current_state": null}`},
		{tools.AppendRunJournalEntry, `{"entry": "X is idempotent", "section": "verified_findings"}`},
		{tools.AskHuman, `{"question": "Which quarter?"}`},
	} {
		if err := tools.ValidateArgs(tt.tool, tt.args); err != nil {
			t.Errorf("ValidateArgs(%s, %s) = %v, want nil", tt.tool, tt.args, err)
		}
	}
}
