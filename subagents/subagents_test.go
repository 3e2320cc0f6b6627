package subagents

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/lucy-agent/lucy/workflows/agent"
)

// The budget leaves SummaryBefore for the report, or a quarter of a budget too short for that.
func TestLimitsLeaveTimeForTheReport(t *testing.T) {
	for _, c := range []struct {
		budget, soft, hard time.Duration
	}{
		{0, DefaultBudget - SummaryBefore, DefaultBudget},
		{120 * time.Second, 95 * time.Second, 120 * time.Second},
		{40 * time.Second, 30 * time.Second, 40 * time.Second},
	} {
		if got := limitsFor(c.budget); got.Soft != c.soft || got.Absolute != c.hard {
			t.Errorf("budget %v: limits %+v, want soft %v, absolute %v", c.budget, got, c.soft, c.hard)
		}
	}
}

// A completed sub-agent's JSON becomes the report; one that ran out of time reports what its tools
// did, as partial; the tool calls come from the records, not from the model's word.
func TestReportFromTheLoopsOutcome(t *testing.T) {
	spec, _ := ForTool("delegate_to_research_agent")
	recs := []agent.ToolRecord{{Name: "lucy_web_fetch", Result: "page"}, {Name: "lucy_web_search", IsError: true}}
	rep := report(spec, Outcome{Answer: `{"summary":"found it","confidence":"HIGH"}`, Status: StatusCompleted, Turns: 3, Records: recs})
	if rep.Summary != "found it" || rep.Confidence != "high" || rep.Status != StatusCompleted || rep.Agent != "research" || rep.Turns != 3 || rep.Note != "" {
		t.Errorf("completed: %+v", rep)
	}
	if strings.Join(rep.ToolCalls, ",") != "lucy_web_fetch (ok),lucy_web_search (error)" {
		t.Errorf("tool calls %v", rep.ToolCalls)
	}
	rep = report(spec, Outcome{Answer: "half", Status: StatusCompleted, TimedOut: true, Records: recs})
	if rep.Status != StatusPartial || rep.Note != "its time budget ran out" || rep.Confidence != "low" || rep.Summary == "half" {
		t.Errorf("timed out: %+v", rep)
	}
	rep = report(spec, Outcome{Answer: "prose", Status: StatusFailed, Reason: "stuck"})
	if rep.Summary != "prose" || rep.Note != "stuck" || rep.Confidence != "low" {
		t.Errorf("failed: %+v", rep)
	}
}

// A model that answers in prose still gets its text through; a report too long for the parent keeps
// its summary and drops its lists.
func TestParseAndRenderReport(t *testing.T) {
	if r := ParseReport("just prose"); r.Summary != "just prose" || r.Confidence != "low" {
		t.Errorf("prose: %+v", r)
	}
	r := ParseReport("```json\n{\"summary\":\"s\",\"evidence\":[\"a claim\"]}\n```")
	if r.Summary != "s" || len(r.Evidence) != 1 || r.Evidence[0].Claim != "a claim" {
		t.Errorf("fenced, string evidence: %+v", r)
	}
	long := Report{Summary: "keep me", Evidence: []Evidence{{Claim: strings.Repeat("x", ReportMaxChars)}}}
	out := long.Render()
	if len(out) > ReportMaxChars || !strings.Contains(out, "keep me") || strings.Contains(out, "xxxx") {
		t.Errorf("render of a long report: %d chars, %.200q", len(out), out)
	}
}

// Every registry row's prompt is served where its Spec says, beside the base prompt files, and a
// missing one is named by the path asked for.
func TestPromptFSServesEachSubAgentsPrompt(t *testing.T) {
	base := fstest.MapFS{"SOUL_LITE.md": {Data: []byte("persona")}}
	fsys := PromptFS(base)
	for _, s := range Specs() {
		b, err := fs.ReadFile(fsys, s.Prompt)
		if err != nil || len(strings.TrimSpace(string(b))) == 0 {
			t.Errorf("%s: prompt %s: %v", s.Name, s.Prompt, err)
		}
	}
	if b, err := fs.ReadFile(fsys, "SOUL_LITE.md"); err != nil || string(b) != "persona" {
		t.Errorf("base file: %q, %v", b, err)
	}
	_, err := fs.ReadFile(fsys, "sub_agents/nobody.md")
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != "sub_agents/nobody.md" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing prompt: %v", err)
	}
}
