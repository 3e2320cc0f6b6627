package agent

import (
	"fmt"
	"strings"
	"testing"
)

func TestJournalApply(t *testing.T) {
	var j Journal
	steps := []struct {
		name       string
		tool, args string
		want       string // result, or error text when errHas is set
		errHas     string
	}{
		{"update objective and state", ToolUpdateRunJournal, `{"objective":"Churn report for January","current_state":"Listing churned customers"}`,
			"Journal updated: objective, current_state.", ""},
		{"update next action", ToolUpdateRunJournal, `{"handoff_next_action":"Build the spreadsheet"}`, "Journal updated: handoff_next_action.", ""},
		{"append finding", ToolAppendRunJournalEntry, `{"section":"verified_findings","entry":"Stripe lists 14 churned customers"}`,
			"Added to verified_findings (1 entries).", ""},
		{"append with alias and white space", ToolAppendRunJournalEntry, `{"section":"Open Questions","entry":"  Which  currency?\n"}`,
			"Added to open_questions (1 entries).", ""},
		{"duplicate entry", ToolAppendRunJournalEntry, `{"section":"verified_findings","entry":"Stripe lists 14 churned customers"}`,
			"Already in verified_findings; nothing added.", ""},
		{"append blocker", ToolAppendRunJournalEntry, `{"section":"blockers","entry":"Polar API returns 403"}`, "Added to blockers (1 entries).", ""},
		{"get ignores arguments", ToolGetRunJournal, `{}`, "", ""},
		// Bad arguments.
		{"not json", ToolUpdateRunJournal, `objective=x`, "", "arguments must be a JSON object"},
		{"array", ToolAppendRunJournalEntry, `["a"]`, "", "arguments must be a JSON object"},
		{"update nothing", ToolUpdateRunJournal, `{}`, "", "give at least one of objective, current_state, handoff_next_action"},
		{"update unknown field", ToolUpdateRunJournal, `{"objective":"x","blockers":"y"}`, "", `unknown field "blockers"`},
		{"update non-string", ToolUpdateRunJournal, `{"objective":3}`, "", `field "objective" must be a string`},
		{"append unknown section", ToolAppendRunJournalEntry, `{"section":"objective","entry":"x"}`, "", `unknown section "objective"`},
		{"append missing section", ToolAppendRunJournalEntry, `{"entry":"x"}`, "", `missing "section"`},
		{"append empty entry", ToolAppendRunJournalEntry, `{"section":"decisions","entry":"  "}`, "", `"entry" must be a non-empty string`},
		{"append entry not a string", ToolAppendRunJournalEntry, `{"section":"decisions","entry":["a"]}`, "", `field "entry" must be a string`},
		{"not a journal tool", "lucy_web_search", `{}`, "", "is not a journal tool"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			got, err := j.Apply(s.tool, s.args)
			if s.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), s.errHas) {
					t.Fatalf("Apply(%s, %s) error = %v, want one containing %q", s.tool, s.args, err, s.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply(%s, %s): %v", s.tool, s.args, err)
			}
			if s.want != "" && got != s.want {
				t.Errorf("Apply(%s, %s) = %q, want %q", s.tool, s.args, got, s.want)
			}
		})
	}
	if j.Objective != "Churn report for January" || j.NextAction != "Build the spreadsheet" ||
		len(j.VerifiedFindings) != 1 || j.OpenQuestions[0] != "Which currency?" {
		t.Errorf("journal = %+v", j)
	}
	got, _ := j.Apply(ToolGetRunJournal, "")
	if got != j.Render() {
		t.Error("get_run_journal does not return Render()")
	}
	golden(t, "journal_render.md", got)
	golden(t, "journal_digest.txt", j.Digest())
}

func TestJournalCaps(t *testing.T) {
	var j Journal
	for i := range JournalMaxEntries + 3 {
		res, err := j.Apply(ToolAppendRunJournalEntry, fmt.Sprintf(`{"section":"decisions","entry":"decision %d"}`, i))
		if err != nil {
			t.Fatal(err)
		}
		if i >= JournalMaxEntries && !strings.Contains(res, "oldest entry was dropped") {
			t.Errorf("entry %d: result %q does not say the oldest was dropped", i, res)
		}
	}
	if len(j.Decisions) != JournalMaxEntries || j.Decisions[0] != "decision 3" || j.Decisions[JournalMaxEntries-1] != "decision 52" {
		t.Errorf("decisions: %d entries from %q to %q", len(j.Decisions), j.Decisions[0], j.Decisions[len(j.Decisions)-1])
	}
	res, err := j.Apply(ToolAppendRunJournalEntry, `{"section":"artifacts","entry":"`+strings.Repeat("a", 900)+`"}`)
	if err != nil || !strings.Contains(res, "cut to 500 characters") || runeLen(j.Artifacts[0]) != JournalEntryMaxChars {
		t.Errorf("long entry: %q, %v, stored %d characters", res, err, runeLen(j.Artifacts[0]))
	}
	if _, err := j.Apply(ToolUpdateRunJournal, `{"current_state":"`+strings.Repeat("s", 3000)+`"}`); err != nil || runeLen(j.CurrentState) != JournalFieldMaxChars {
		t.Errorf("long field: %v, stored %d characters", err, runeLen(j.CurrentState))
	}
}

func TestJournalDigest(t *testing.T) {
	if got := (Journal{}).Digest(); got != "" {
		t.Errorf("empty journal digest = %q", got)
	}
	j := Journal{
		Objective:    strings.Repeat("objective ", 30),
		CurrentState: strings.Repeat("state ", 60),
		Blockers:     []string{"first blocker", "second blocker"},
		NextAction:   "Ask finance for the export",
	}
	for i := range 10 {
		j.VerifiedFindings = append(j.VerifiedFindings, fmt.Sprintf("finding %d", i))
	}
	got := j.Digest()
	if n := runeLen(got); n > JournalDigestChars {
		t.Errorf("digest is %d characters, want ≤ %d", n, JournalDigestChars)
	}
	for _, want := range []string{"Objective: objective", "Current state: state", "Blocker: first blocker", "Next action: Ask finance", "finding 9; finding 8"} {
		if !strings.Contains(got, want) {
			t.Errorf("digest lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "second blocker") || strings.Contains(got, "finding 0") {
		t.Errorf("digest carries more than it should:\n%s", got)
	}
}

func TestJournalRenderEmpty(t *testing.T) {
	got := (Journal{}).Render()
	for _, want := range []string{"# Run journal", "## Objective\n_(empty)_", "## Blockers\n_(none)_", "## Next action\n_(empty)_"} {
		if !strings.Contains(got, want) {
			t.Errorf("empty render lacks %q:\n%s", want, got)
		}
	}
	if !(Journal{}).IsEmpty() || (Journal{Blockers: []string{"x"}}).IsEmpty() {
		t.Error("IsEmpty")
	}
}
