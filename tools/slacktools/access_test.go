package slacktools

import (
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/slackaccess"
)

// accessWorkspace: ULOCAL asks from #general (CLOCAL) and is in #random; Alice is everywhere; UBOSS
// is an admin in no channel. #secret-plans is private (Alice and Lucy), #sales is public but ULOCAL
// is not in it, DALICE is Alice's DM with Lucy, GTRIO a group DM of Alice, ULOCAL and Lucy.
func accessWorkspace(t *testing.T) *slackWorkspace {
	t.Helper()
	srv, base := localslack.NewTestServer(t, localslack.Options{
		Team: testTeam,
		Users: []localslack.User{
			{ID: "ULOCAL", Name: "local"}, {ID: "UALICE", Name: "alice"}, {ID: "UBOSS", Name: "boss"},
		},
		UserTokens: map[string]string{"xoxp-alice": "UALICE"},
		Channels: []localslack.Channel{
			{ID: "CLOCAL", Name: "general"},
			{ID: "CRANDOM", Name: "random", Members: []string{"ULOCAL", "UALICE", localslack.DefaultBotUserID}},
			{ID: "CPLANS", Name: "secret-plans", IsPrivate: true, Members: []string{"UALICE", localslack.DefaultBotUserID}},
			{ID: "CSALES", Name: "sales", Members: []string{"UALICE", localslack.DefaultBotUserID}},
			{ID: "DALICE", IsIM: true, User: "UALICE"},
			{ID: "GTRIO", IsMPIM: true, Members: []string{"UALICE", "ULOCAL", localslack.DefaultBotUserID}},
		},
	})
	bot := slack.New(localslack.DefaultToken, slack.OptionAPIURL(base))
	alice := slack.New("xoxp-alice", slack.OptionAPIURL(base))
	w := &slackWorkspace{base: base, srv: srv, alice: alice, now: testNow}
	w.r = newTestSlack(t, testDeps{Admins: []string{"UBOSS"}, Slack: func(team string) tools.SlackAPI {
		if team != testTeam {
			return nil
		}
		return bot
	}}, &w.now)
	return w
}

// A person cannot have Lucy read or post where they could not themselves: a private channel, a
// public channel they are not in, someone else's DM with Lucy, a thread elsewhere. The model is told
// why, and Slack is never asked for the content. An admin may, except for DMs.
func TestAccessRefusesConversationsTheRequesterIsNotIn(t *testing.T) {
	w := accessWorkspace(t)
	secret := w.say(t, "CPLANS", "the acquisition closes Friday")
	w.say(t, "CSALES", "pipeline is 2M")
	w.say(t, "DALICE", "my salary question")
	w.say(t, "GTRIO", "trio chat")
	w.say(t, "CRANDOM", "lunch?")

	reads := func() int {
		return w.srv.Calls("conversations.history") + w.srv.Calls("conversations.replies")
	}
	before := reads()
	for _, c := range []struct{ tool, args, want string }{
		{tools.GetChannelHistory, `{"channel": "CPLANS"}`, "<@ULOCAL> is not a member of CPLANS"},
		{tools.GetChannelHistory, `{"channel": "#sales"}`, "<@ULOCAL> is not a member of #sales"},
		{tools.GetChannelHistory, `{"channel": "DALICE"}`, "direct-message conversation other than this one"},
		{tools.GetThread, `{"channel": "CPLANS", "ts": "` + secret + `"}`, "<@ULOCAL> is not a member of CPLANS"},
		{tools.PostMessage, `{"channel": "#secret-plans", "text": "hi"}`, "<@ULOCAL> is not a member of #secret-plans"},
		{tools.PostMessage, `{"channel": "DALICE", "text": "hi"}`, "direct-message conversation"},
	} {
		out := mustRun(t, w.r, c.tool, c.args)
		wantToolError(t, out, c.want)
		if strings.Contains(out.Content, "acquisition") || strings.Contains(out.Content, "salary") || strings.Contains(out.Content, "pipeline") {
			t.Errorf("%s(%s) leaked content: %s", c.tool, c.args, out.Content)
		}
	}
	if n := reads(); n != before {
		t.Errorf("refused reads still asked Slack for history: %d calls", n-before)
	}
	if msgs := w.srv.Messages("CPLANS", ""); len(msgs) != 1 {
		t.Errorf("a refused post was posted: %d messages in #secret-plans", len(msgs))
	}

	// Where the requester is a member, and in the conversation of the request itself, it works.
	wantOK(t, mustRun(t, w.r, tools.GetChannelHistory, `{"channel": "CRANDOM"}`), "lunch?")
	wantOK(t, mustRun(t, w.r, tools.GetChannelHistory, `{"channel": "GTRIO"}`), "trio chat")
	wantOK(t, mustRun(t, w.r, tools.GetChannelHistory, `{"channel": "CLOCAL"}`))

	// An admin may read any channel Lucy is in, but never someone else's DM.
	wantOK(t, mustRunFor(t, w.r, "UBOSS", tools.GetChannelHistory, `{"channel": "CPLANS"}`), "acquisition closes Friday")
	wantToolError(t, mustRunFor(t, w.r, "UBOSS", tools.GetChannelHistory, `{"channel": "DALICE"}`), "direct-message conversation")

	// The DM of the request itself is its own conversation.
	out, err := w.r.Run(t.Context(), tools.Invocation{Name: tools.GetChannelHistory, Arguments: `{"channel": "DALICE"}`,
		Team: testTeam, Channel: "DALICE", User: "UALICE", RunID: "r", CallID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, out, "my salary question")
}

// Lists show only what the requester may see; an admin sees every channel Lucy can.
func TestAccessListsOnlyTheRequestersChannels(t *testing.T) {
	w := accessWorkspace(t)
	out := mustRun(t, w.r, tools.ListSlackChannels, `{}`)
	wantOK(t, out, "#general", "#random", "is a member of")
	for _, hidden := range []string{"secret-plans", "CPLANS", "#sales", "DALICE"} {
		if strings.Contains(out.Content, hidden) {
			t.Errorf("the list shows %s to someone not in it:\n%s", hidden, out.Content)
		}
	}
	wantOK(t, mustRunFor(t, w.r, "UBOSS", tools.ListSlackChannels, `{}`), "#secret-plans", "#sales")

	// The bot-token search covers only the requester's channels.
	w.say(t, "CPLANS", "launch plans are secret")
	w.say(t, "CRANDOM", "launch party at 5")
	out = mustRun(t, w.r, tools.SearchSlackHistory, `{"query": "launch"}`)
	wantOK(t, out, "launch party")
	if strings.Contains(out.Content, "secret") {
		t.Errorf("search found a message of a private channel the requester is not in:\n%s", out.Content)
	}
}

// Membership is cached briefly: someone removed from a channel loses access once the cache
// expires, and a failed membership lookup refuses instead of letting the read through.
func TestAccessFollowsMembershipChanges(t *testing.T) {
	w := accessWorkspace(t)
	w.now = time.Date(2026, 5, 1, 18, 0, 0, 0, time.UTC)
	w.say(t, "CRANDOM", "lunch?")
	wantOK(t, mustRun(t, w.r, tools.GetChannelHistory, `{"channel": "CRANDOM"}`), "lunch?")

	w.srv.SetMembers("CRANDOM", []string{"UALICE", localslack.DefaultBotUserID})
	calls := w.srv.Calls("users.conversations")
	wantOK(t, mustRun(t, w.r, tools.GetChannelHistory, `{"channel": "CRANDOM"}`), "lunch?") // within the cache's minute
	if n := w.srv.Calls("users.conversations"); n != calls {
		t.Errorf("membership looked up again within its TTL (%d calls)", n-calls)
	}
	w.now = w.now.Add(slackaccess.MembershipTTL)
	wantToolError(t, mustRun(t, w.r, tools.GetChannelHistory, `{"channel": "CRANDOM"}`), "<@ULOCAL> is not a member of CRANDOM")

	w.now = w.now.Add(slackaccess.MembershipTTL)
	w.srv.FailNext("users.conversations", localslack.Failure{SlackError: "missing_scope"})
	out := mustRun(t, w.r, tools.GetChannelHistory, `{"channel": "CPLANS"}`)
	wantToolError(t, out, "could not check whether <@ULOCAL> may see CPLANS")
}
