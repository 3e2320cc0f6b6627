package memory

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/slackaccess"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

var idInText = regexp.MustCompile(`mem-[0-9a-f]{10}`)

func toolRunner(t *testing.T) (*tools.Runner, *Store) {
	t.Helper()
	s := newStore(t, workspace.NewLocalAt(t.TempDir()))
	return tooltest.Runner(t, NewTools(s, NewViewer(slackaccess.New([]string{"UADMIN"}, nil, nil), nil))), s
}

// runAs calls a tool in the test conversation as user, approved or not, with a Guard.
func runAs(t *testing.T, r *tools.Runner, user, name, args string, approved bool, guard string) tools.Output {
	t.Helper()
	inv := tooltest.Invocation(name, args, user)
	inv.Approved, inv.Guard = approved, guard
	out, err := r.Run(t.Context(), inv)
	if err != nil {
		t.Fatalf("%s(%s) as %s: %v", name, args, user, err)
	}
	return out
}

func TestRememberRecallForgetTools(t *testing.T) {
	r, s := toolRunner(t)
	out := tooltest.MustRun(t, r, RememberTool, `{"scope":"person","note":"Prefers short answers in bullet points.","tags":["style"]}`)
	tooltest.WantOK(t, out, "Remembered as mem-", "person <@ULOCAL>")
	mine := idInText.FindString(out.Content)
	// The same fact again merges.
	out = tooltest.MustRun(t, r, RememberTool, `{"scope":"person","about":"me","note":"Prefers short answers in bullet points, always."}`)
	tooltest.WantOK(t, out, "Updated the note "+mine)
	out = tooltest.MustRun(t, r, RememberTool, `{"scope":"entity","about":"Acme","note":"Acme's fiscal year starts in April."}`)
	acme := idInText.FindString(out.Content)
	out = tooltest.MustRunFor(t, r, "UOTHER", RememberTool, `{"scope":"entity","about":"Acme","note":"Acme's contact is Dana."}`)
	dana := idInText.FindString(out.Content)
	tooltest.MustRun(t, r, RememberTool, `{"scope":"workspace","note":"We never deploy on Fridays."}`)

	// "What do you remember about Acme?" lists Acme's notes with their source.
	out = tooltest.MustRun(t, r, RecallTool, `{"about":"Acme"}`)
	tooltest.WantOK(t, out, "2 note(s)", acme, dana, "<@ULOCAL>", "<@UOTHER>")
	out = tooltest.MustRun(t, r, RecallTool, `{"about":"me"}`)
	tooltest.WantOK(t, out, "1 note(s)", mine, "bullet points, always")
	out = tooltest.MustRun(t, r, RecallTool, `{"query":"fiscal year"}`)
	tooltest.WantOK(t, out, acme)
	if strings.Contains(out.Content, dana) {
		t.Errorf("the query found an unrelated note:\n%s", out.Content)
	}
	out = tooltest.MustRun(t, r, RecallTool, `{"query":"quantum chromodynamics"}`)
	tooltest.WantOK(t, out, "No note matches")

	// Forgetting one's own note needs no approval, and it is gone from storage.
	out = tooltest.MustRun(t, r, ForgetTool, `{"id":"`+mine+`"}`)
	tooltest.WantOK(t, out, "Forgotten for good: "+mine)
	if _, err := s.Get(context.Background(), tooltest.Team, mine); err == nil {
		t.Fatal("the forgotten note is still stored")
	}
	out = tooltest.MustRun(t, r, ForgetTool, `{"id":"`+mine+`"}`)
	tooltest.WantToolError(t, out, "already forgotten")

	// Another person's note is theirs: refused, however approved.
	out = tooltest.MustRun(t, r, ForgetTool, `{"id":"`+dana+`"}`)
	tooltest.WantToolError(t, out, "only its author or an admin")
	// An admin's forget of it waits for approval, and the approval applies to what was shown.
	out = runAs(t, r, "UADMIN", ForgetTool, `{"id":"`+dana+`"}`, false, "")
	need := tooltest.WantHeld(t, out, "forgetting the note")
	tooltest.WantContains(t, need.Details, "Acme's contact is Dana.", "<@UOTHER>")
	if _, err := s.Get(context.Background(), tooltest.Team, dana); err != nil {
		t.Fatal("a held forget deleted the note")
	}
	if out := runAs(t, r, "UADMIN", ForgetTool, `{"id":"`+dana+`"}`, true, "sha256:stale"); out.NeedsApproval == nil {
		t.Fatal("an approval of another version of the note was accepted")
	}
	out = runAs(t, r, "UADMIN", ForgetTool, `{"id":"`+dana+`"}`, true, need.Guard)
	tooltest.WantOK(t, out, "Forgotten for good: "+dana)

	// A workspace note is everyone's: even its author's forget waits.
	out = tooltest.MustRun(t, r, ForgetTool, `{"query":"deploy fridays"}`)
	tooltest.WantHeld(t, out, "forgetting the note", "workspace")

	// "Update memory for Acme": an edit by ID keeps the note and replaces its text.
	out = tooltest.MustRun(t, r, RememberTool, `{"scope":"entity","about":"Acme","id":"`+acme+`","note":"Acme's fiscal year starts in July."}`)
	tooltest.WantOK(t, out, "Updated "+acme, "starts in July", "it said: Acme's fiscal year starts in April.")
	n, err := s.Get(context.Background(), tooltest.Team, acme)
	if err != nil || n.Text != "Acme's fiscal year starts in July." {
		t.Fatalf("after the edit: %+v, %v", n, err)
	}
}

func TestForgetByQueryWithSeveralMatchesAsksForAnID(t *testing.T) {
	r, _ := toolRunner(t)
	tooltest.MustRun(t, r, RememberTool, `{"scope":"person","note":"Lives in Lisbon."}`)
	tooltest.MustRun(t, r, RememberTool, `{"scope":"person","note":"Flies to Lisbon monthly for the office."}`)
	out := tooltest.MustRun(t, r, ForgetTool, `{"query":"Lisbon"}`)
	tooltest.WantOK(t, out, "Nothing was forgotten: 2 notes match")
}

func TestMemoryToolArgumentErrors(t *testing.T) {
	r, _ := toolRunner(t)
	for _, c := range []struct{ name, args, want string }{
		{RememberTool, `{"scope":"entity","note":"x"}`, "entity's name"},
		{RememberTool, `{"scope":"person","about":"bob","note":"x"}`, "Slack ID"},
		{RememberTool, `{"scope":"planet","note":"x"}`, "scope"},
		{ForgetTool, `{}`, ""},
		{RecallTool, `{"about":"<@U1>","scopes":["entity"]}`, "not among the scopes"},
	} {
		_, err := tooltest.Run(t, r, c.name, c.args)
		tooltest.WantArgError(t, err, c.name, c.want)
	}
}
