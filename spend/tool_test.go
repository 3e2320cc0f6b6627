package spend

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

// lucy_set_spend_limit: a member is refused before anyone is asked; an admin is asked to approve the
// change as shown, and only the approval with that guard sets it; the next check of a run sees it.
func TestSetSpendLimit(t *testing.T) {
	ctx := context.Background()
	now := tooltest.Now()
	l := New(workspace.NewLocalAt(t.TempDir()), Limits{TeamDaily: {USD: 1}})
	r := tooltest.Runner(t, NewTools(l, []string{"UADMIN"}, func() time.Time { return now }))
	if err := l.Record(ctx, tooltest.Team, "U1", "run-0", now, map[string]Usage{"gpt-4o": {Prompt: 400_000}}); err != nil { // $1.00
		t.Fatal(err)
	}
	if ref, err := l.Check(ctx, tooltest.Team, "U1", now); err != nil || ref == nil || ref.Budget != TeamDaily {
		t.Fatalf("before: %+v %v", ref, err)
	}
	call := func(user, args string, approved bool, guard string) tools.Output {
		t.Helper()
		inv := tooltest.Invocation(SetLimitTool, args, user)
		inv.Approved, inv.Guard = approved, guard
		out, err := r.Run(ctx, inv)
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		return out
	}
	args := `{"budget": "team_daily", "limit": "$50"}`
	tooltest.WantToolError(t, call("U1", args, false, ""), "only an admin (LUCY_ADMIN_USERS) can set a spend limit")
	tooltest.WantToolError(t, call("U1", args, true, "sha256:whatever"), "only an admin")

	need := tooltest.WantHeld(t, call("UADMIN", args, false, ""), "the team's daily budget")
	tooltest.WantContains(t, need.Summary, "set the team's daily budget for this workspace to $50.00")
	tooltest.WantContains(t, need.Details, "team_daily: $1.00, the operator's default → $50.00")
	// An approval of something else (a stale guard) changes nothing and asks again.
	tooltest.WantHeld(t, call("UADMIN", args, true, "sha256:stale"))
	if ref, _ := l.Check(ctx, tooltest.Team, "U1", now); ref == nil {
		t.Fatal("a stale approval changed the limit")
	}
	tooltest.WantOK(t, call("UADMIN", args, true, need.Guard), "Set the team's daily budget to $50.00 (was $1.00, the operator's default)")
	if ref, err := l.Check(ctx, tooltest.Team, "U1", now); err != nil || ref != nil {
		t.Fatalf("after the raise: %+v %v", ref, err)
	}
	_, o, _ := l.Limits(ctx, tooltest.Team)
	if o.SetBy[TeamDaily] != "UADMIN" || o.SetAt[TeamDaily] != now.Format(time.RFC3339) {
		t.Errorf("override recorded as %+v", o)
	}

	// Back to the default: asked with the default shown, then the budget is used up again.
	back := `{"budget": "team_daily", "limit": "default"}`
	need = tooltest.WantHeld(t, call("UADMIN", back, false, ""))
	tooltest.WantContains(t, need.Details, "$50.00, set by <@UADMIN>", "→ $1.00 (the operator's default)")
	tooltest.WantOK(t, call("UADMIN", back, true, need.Guard))
	if ref, _ := l.Check(ctx, tooltest.Team, "U1", now); ref == nil {
		t.Fatal("default not restored")
	}

	// Mistakes are argument errors, before the store is read.
	_, err := r.Run(ctx, tooltest.Invocation(SetLimitTool, `{"budget": "team_daily", "limit": "-3"}`, "UADMIN"))
	tooltest.WantArgError(t, err, SetLimitTool, "neither dollars")
	// A worker without a state store says so.
	bare := tooltest.Runner(t, NewTools(nil, []string{"UADMIN"}, nil))
	if _, err := bare.Run(ctx, tooltest.Invocation(SetLimitTool, args, "UADMIN")); err == nil {
		t.Error("no ledger: no error")
	}
}

// lucy_spend_report: a member sees their own spend and the team's totals, never another person's; an
// admin sees the whole report.
func TestSpendReport(t *testing.T) {
	ctx := context.Background()
	now := tooltest.Now()
	l := New(workspace.NewLocalAt(t.TempDir()), Limits{PersonDaily: {USD: 1}, TeamMonthly: {Tokens: 1_000_000}})
	r := tooltest.Runner(t, NewTools(l, []string{"UADMIN"}, func() time.Time { return now }))
	for person, u := range map[string]Usage{"ULOCAL": {Prompt: 400_000}, "USECRET": {Prompt: 100_000, Completion: 10_000}} {
		if err := l.Record(ctx, tooltest.Team, person, "run-"+person, now, map[string]Usage{"gpt-4o": u}); err != nil {
			t.Fatal(err)
		}
	}
	out := tooltest.MustRunFor(t, r, "ULOCAL", ReportTool, `{}`)
	tooltest.WantOK(t, out, "Model spend in May 2026",
		"You today: $1.00, 400000 tokens; budget: OVER: $1.00 of $1.00, new requests refused until 2 May 00:00 UTC",
		"You this month: $1.00, 400000 tokens; budget: no limit",
		"The team this month: $1.35, 510000 tokens; budget: 510000 of 1000000 tokens")
	if strings.Contains(out.Content, "USECRET") {
		t.Errorf("a member sees another person's spend:\n%s", out.Content)
	}
	tooltest.WantOK(t, tooltest.MustRunFor(t, r, "UADMIN", ReportTool, `{"month": "2026-05"}`), "USECRET", "ULOCAL", "gpt-4o")
	tooltest.WantOK(t, tooltest.MustRunFor(t, r, "ULOCAL", ReportTool, `{"month": "2026-04"}`), "You in April 2026: $0.00, 0 tokens")
	_, err := tooltest.RunFor(t, r, "ULOCAL", ReportTool, `{"month": "May"}`)
	tooltest.WantArgError(t, err, ReportTool, "not yyyy-mm")
}
