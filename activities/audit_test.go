package activities

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/audit"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/clock"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/tools/slackaccess"
	"github.com/lucy-agent/lucy/tools/slacktools"
	"github.com/lucy-agent/lucy/workspace"
)

// auditSource offers a team's integration tools as an MCP server's would: one that changes
// something (not read-only) and one that only reads (readOnlyHint, which makes it Idempotent).
type auditSource struct{ calls *[]string }

func (s auditSource) Tools(_ context.Context, team string) ([]tools.Tool, error) {
	params := map[string]any{"type": "object", "properties": map[string]any{
		"title": map[string]any{"type": "string"}, "api_key": map[string]any{"type": "string"}}}
	run := func(name string) tools.Handler {
		return func(_ context.Context, inv tools.Invocation) (tools.Output, error) {
			*s.calls = append(*s.calls, name)
			return tools.Output{Content: "done"}, nil
		}
	}
	return []tools.Tool{
		{Spec: tools.Spec{Name: "mcp__github__create_issue", Human: "creating a GitHub issue", Parameters: params}, Run: run("create")},
		{Spec: tools.Spec{Name: "mcp__github__list_issues", Human: "listing GitHub issues", Idempotent: true, Parameters: params}, Run: run("list")},
	}, nil
}

// secretKey is a key a person might paste into an argument: it must never reach the record.
const secretKey = "sk-live-Zq8wX2mK9pL4vN7rT1yB6cD3"

// Every call of a tool that is not read-only is recorded where the activity sees its outcome: a
// post in another channel, a file written, a call of an integration that changes something, with
// the run, thread, person, tool, kind and a summary; a read-only call (compiled-in or an
// integration's) is not; a retried activity records once; and no argument is copied, so a key given
// as an argument is nowhere in the stored record.
func TestAuditRecordsSideEffects(t *testing.T) {
	srv, base := localslack.NewTestServer(t, localslack.Options{
		Team:     "TAUD",
		Users:    []localslack.User{{ID: "UANN", Name: "ann"}},
		Channels: []localslack.Channel{{ID: "CGEN", Name: "general", Members: []string{"UANN", localslack.DefaultBotUserID}}, {ID: "DANN", IsIM: true, User: "UANN"}},
	})
	api := slack.New(srv.Options().Token, slack.OptionAPIURL(base))
	bot := func(string) tools.SlackAPI { return api }
	stateDir := t.TempDir()
	rec := audit.New(workspace.NewLocalAt(stateDir), nil)
	ws := files.New(workspace.NewLocal(t.TempDir()), nil)
	var calls []string
	runner, err := tools.NewRunner(zerolog.Nop(), []any{ws, clock.New(nil), slacktools.New(bot, nil, slackaccess.New(nil, slacktools.AccessAPI(bot), nil))},
		auditSource{calls: &calls})
	if err != nil {
		t.Fatal(err)
	}
	a := &Activities{Tools: runner, Audit: rec, Log: zerolog.Nop()}
	env := quietSuite().NewTestActivityEnvironment()
	env.SetTestTimeout(time.Minute)
	env.RegisterActivity(a)
	const run = "lane:TAUD:DANN:1764300000.000100:run:1:1764300000.000100"
	call := func(id, name, args string, approved bool) {
		t.Helper()
		val, err := env.ExecuteActivity(a.ExecuteTool, ExecuteToolInput{Name: name, Arguments: args, CallID: id, Team: "TAUD",
			Channel: "DANN", ThreadTS: "1764300000.000100", User: "UANN", RunID: run, Approved: approved})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var res ToolResult
		if err := val.Get(&res); err != nil || res.IsError {
			t.Fatalf("%s: %+v %v", name, res, err)
		}
	}
	call("c1", tools.PostMessage, `{"channel": "CGEN", "text": "Standup moved to 10:00"}`, true)
	call("c2", tools.WriteFile, `{"path": "notes/keys.txt", "content": "token `+secretKey+`"}`, false)
	call("c3", "mcp__github__create_issue", `{"title": "Flaky test", "api_key": "`+secretKey+`"}`, false)
	call("c4", "mcp__github__list_issues", `{"api_key": "`+secretKey+`"}`, false)
	call("c5", tools.ReadFile, `{"path": "notes/keys.txt"}`, false)
	call("c6", tools.CurrentTime, `{}`, false)
	if strings.Join(calls, ",") != "create,list" {
		t.Fatalf("the integration was called %v", calls)
	}

	got, err := rec.List(context.Background(), "TAUD", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ tool, kind, summary string }{
		{tools.PostMessage, audit.KindPost, "<#CGEN>"},
		{tools.WriteFile, audit.KindFile, "notes/keys.txt"},
		{"mcp__github__create_issue", audit.KindIntegration, "creating a GitHub issue"},
	}
	if len(got) != len(want) {
		t.Fatalf("recorded %d entries, want %d (the read-only calls left out): %+v", len(got), len(want), got)
	}
	for i, w := range want {
		e := got[i]
		if e.Tool != w.tool || e.Kind != w.kind || !strings.Contains(e.Summary, w.summary) {
			t.Errorf("entry %d = %s/%s %q, want %s/%s containing %q", i, e.Tool, e.Kind, e.Summary, w.tool, w.kind, w.summary)
		}
		if e.Team != "TAUD" || e.Channel != "DANN" || e.ThreadTS != "1764300000.000100" || e.RunID != run || e.User != "UANN" ||
			e.Outcome != "ok" || e.ID == "" || e.Time.IsZero() {
			t.Errorf("entry %d = %+v: where, who, when or how missing", i, e)
		}
	}
	if !got[0].Approved || got[1].Approved {
		t.Errorf("approved marks: post %v, write %v; want true, false", got[0].Approved, got[1].Approved)
	}
	// Not the text posted, not the content written, not the key.
	noSecretIn(t, stateDir, secretKey, "Standup moved", "token ")

	// A retried activity (the same workflow and activity ID) is one entry.
	dup := got[2]
	if err := rec.Record(context.Background(), dup); err != nil {
		t.Fatal(err)
	}
	if again, _ := rec.List(context.Background(), "TAUD", time.Now().Add(-time.Hour), time.Now().Add(time.Hour)); len(again) != len(got) {
		t.Errorf("recording an entry again added it: %d entries", len(again))
	}
}

// noSecretIn fails when any file under dir holds one of the strings.
func noSecretIn(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds %q:\n%s", p, s, b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// An approval's decision is recorded with who gave it, where and for which tool: from the fields
// the workflow sends, and, for a prompt resolved by a call scheduled before they existed, from its
// outcome line ("Denied by <@U2>").
func TestAuditRecordsApprovals(t *testing.T) {
	f := newSlackFixture(t)
	stateDir := t.TempDir()
	f.a.Audit = audit.New(workspace.NewLocalAt(stateDir), nil)
	root := f.say(t, "U1", "", "<@ULUCY> email the team")
	in := approvalInput(root)
	var res PostResult
	if err := f.run(t, f.a.PostApprovalPrompt, in, &res); err != nil {
		t.Fatal(err)
	}
	const run = "lane:T1:C1:1700000000.000100:run:1:1700000000.000100"
	if err := f.run(t, f.a.ResolveApprovalPrompt, ResolveApprovalInput{Team: "T1", Channel: "C1", TS: res.TS, Summary: "send an email to team@acme.test: \"Friday demo\"",
		Outcome: "Approved by <@U2>", RunID: run, ThreadTS: root, Requester: "U1", Tool: "lucy_send_email", Decision: "approved", By: "U2"}, nil); err != nil {
		t.Fatal(err)
	}
	second := approvalInput(root)
	second.Fingerprint = "fp-43"
	if err := f.run(t, f.a.PostApprovalPrompt, second, &res); err != nil {
		t.Fatal(err)
	}
	if err := f.run(t, f.a.ResolveApprovalPrompt, ResolveApprovalInput{Team: "T1", Channel: "C1", TS: res.TS, Summary: "post a message in #general",
		Outcome: "Denied by <@U1>"}, nil); err != nil {
		t.Fatal(err)
	}
	got, err := f.a.Audit.List(context.Background(), "T1", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("recorded %+v, want the two decisions", got)
	}
	a, d := got[0], got[1]
	if a.Kind != audit.KindApproval || a.Outcome != "approved" || a.By != "U2" || a.User != "U1" || a.Tool != "lucy_send_email" ||
		a.RunID != run || a.ThreadTS != root || a.Channel != "C1" || !strings.Contains(a.Summary, "Friday demo") {
		t.Errorf("approval = %+v", a)
	}
	if d.Kind != audit.KindApproval || d.Outcome != "denied" || d.By != "U1" || d.Summary != "post a message in #general" {
		t.Errorf("denial read from its outcome line = %+v", d)
	}
}
