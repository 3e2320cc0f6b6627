package activitylog_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/server/temporaltest"

	"github.com/lucy-agent/lucy/audit"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/searchattr"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/activitylog"
	"github.com/lucy-agent/lucy/tools/slackaccess"
	"github.com/lucy-agent/lucy/workspace"
)

// A workspace with a public channel the member is in (#team), a private one they are not in
// (#board), each person's DM with Lucy, and an admin; runs in each conversation, started on a real
// Temporal server as the lane starts them (search attributes and memo), and side effects recorded
// in #team and #board.
func TestMemberSeesOnlyTheirConversations(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	_, base := localslack.NewTestServer(t, localslack.Options{
		Team:  "TACT",
		Users: []localslack.User{{ID: "UMEM", Name: "mem"}, {ID: "UOTH", Name: "oth"}, {ID: "UBOSS", Name: "boss"}},
		Channels: []localslack.Channel{
			{ID: "CTEAM", Name: "team", Members: []string{"UMEM", "UOTH", localslack.DefaultBotUserID}},
			{ID: "CBOARD", Name: "board", IsPrivate: true, Members: []string{"UOTH", localslack.DefaultBotUserID}},
			{ID: "DMEM", IsIM: true, User: "UMEM"},
			{ID: "DOTH", IsIM: true, User: "UOTH"},
			{ID: "DBOSS", IsIM: true, User: "UBOSS"},
		},
	})
	bot := slack.New(localslack.DefaultToken, slack.OptionAPIURL(base))
	access := slackaccess.New([]string{"UBOSS"}, func(string) slackaccess.API { return bot }, nil)

	srv := temporaltest.NewServer(temporaltest.WithT(t))
	c := srv.GetDefaultClient()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := searchattr.Register(ctx, c, srv.GetDefaultNamespace()); err != nil {
		t.Fatal(err)
	}
	runID := func(channel string) string {
		return "lane:TACT:" + channel + ":1764300000.000100:run:1:1764300000.000100"
	}
	for _, r := range []struct{ channel, user, objective string }{
		{"CTEAM", "UOTH", "summarize the sprint"},
		{"CBOARD", "UOTH", "draft the layoffs memo"},
		{"DOTH", "UOTH", "my performance review"},
		{"DMEM", "UMEM", "plan my week"},
	} {
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: runID(r.channel), TaskQueue: "activitylog-test-nobody-polls",
			TypedSearchAttributes: temporal.NewSearchAttributes(searchattr.Workspace.ValueSet("TACT"),
				searchattr.Channel.ValueSet(r.channel), searchattr.User.ValueSet(r.user)),
			Memo: map[string]any{"objective": r.objective},
		}, audit.RunWorkflowType)
		if err != nil {
			t.Fatal(err)
		}
	}
	for {
		resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: srv.GetDefaultNamespace(), Query: "LucyWorkspace = 'TACT'"})
		if err == nil && resp.GetCount() == 4 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("visibility never listed the runs: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	rec := audit.New(workspace.NewLocalAt(t.TempDir()), nil)
	for _, e := range []audit.Entry{
		{ID: "e1", Team: "TACT", Channel: "CTEAM", RunID: runID("CTEAM"), User: "UOTH", Kind: audit.KindPost, Tool: "lucy_post_message",
			Summary: "post a message in <#CRELEASE>", Outcome: "ok"},
		{ID: "e2", Team: "TACT", Channel: "CBOARD", RunID: runID("CBOARD"), User: "UOTH", Kind: audit.KindApproval, Tool: "lucy_send_email",
			Summary: "send an email to hr@example.com", Outcome: "approved", By: "UOTH"},
		{ID: "e3", Team: "TACT", Channel: "CBOARD", RunID: runID("CBOARD"), User: "UOTH", Kind: audit.KindEmail, Tool: "lucy_send_email",
			Summary: "send an email to hr@example.com", Outcome: "ok", Approved: true},
		{ID: "e4", Team: "TACT", Channel: "DOTH", RunID: runID("DOTH"), User: "UOTH", Kind: audit.KindConnect, Tool: "lucy_connect_service",
			Summary: "connect GitHub", Outcome: "ok"},
	} {
		if err := rec.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	runner, err := tools.NewRunner(zerolog.Nop(), []any{activitylog.New(rec, c, nil, access, nil)})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(user, channel, args string) string {
		t.Helper()
		out, err := runner.Run(ctx, tools.Invocation{Name: activitylog.Name, Arguments: args, Team: "TACT", Channel: channel, User: user, RunID: "r", CallID: "c"})
		if err != nil || out.IsError {
			t.Fatalf("%s in %s: %+v %v", user, channel, out, err)
		}
		return out.Content
	}
	has := func(t *testing.T, out string, want, notWant []string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("answer lacks %q:\n%s", w, out)
			}
		}
		for _, w := range notWant {
			if strings.Contains(out, w) {
				t.Errorf("answer shows %q:\n%s", w, out)
			}
		}
	}
	secretOfBoard := []string{"CBOARD", "layoffs", "hr@example.com"}
	othersDM := []string{"DOTH", "performance review", "connect GitHub"}

	t.Run("member in their own DM", func(t *testing.T) {
		out := ask("UMEM", "DMEM", `{}`)
		has(t, out, []string{"<#CTEAM>", "summarize the sprint", "post a message in <#CRELEASE>", "<#DMEM>", "plan my week", "Runs (2"},
			append(append([]string{"Not listed here"}, secretOfBoard...), othersDM...))
	})
	t.Run("member in the public channel", func(t *testing.T) {
		// Others read the answer here: the member's own DM run is only counted.
		out := ask("UMEM", "CTEAM", `{}`)
		has(t, out, []string{"<#CTEAM>", "summarize the sprint", "Runs (1", "Not listed here: 1 run and 0 side effects"},
			append(append([]string{"plan my week", "DMEM"}, secretOfBoard...), othersDM...))
	})
	t.Run("member asking for email", func(t *testing.T) {
		out := ask("UMEM", "DMEM", `{"kind": "email"}`)
		has(t, out, []string{"Side effects and approvals (0", "Runs (0"}, secretOfBoard)
	})
	t.Run("member of the private channel", func(t *testing.T) {
		out := ask("UOTH", "DOTH", `{"kind": "email"}`)
		has(t, out, []string{"<#CBOARD>", "send an email to hr@example.com", "approved", "draft the layoffs memo", "Runs (1"},
			[]string{"summarize the sprint", "plan my week"})
	})
	t.Run("admin in their own DM", func(t *testing.T) {
		// Every channel, and another person's DM only counted (a DM is two people's).
		out := ask("UBOSS", "DBOSS", `{"since": "`+time.Now().UTC().Add(-24*time.Hour).Format(time.RFC3339)+`"}`)
		has(t, out, []string{"<#CBOARD>", "approved by <@UOTH>", "<#CTEAM>", "Not listed here: 2 runs and 1 side effect"}, othersDM)
	})
	t.Run("who connected", func(t *testing.T) {
		out := ask("UOTH", "DOTH", `{"kind": "connect", "person": "<@UOTH>"}`)
		has(t, out, []string{"connect GitHub", "for <@UOTH>", "Runs (1"}, []string{"summarize the sprint"})
	})
}
