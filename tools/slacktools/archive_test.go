package slacktools

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/slackarchive"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

// Without a user token, the search finds archived messages older than any channel's recent history,
// only in conversations the requester may read, with edits and deletions applied and nothing of a
// channel Lucy left (by its event, or as Slack lists it).
func TestSearchSlackArchive(t *testing.T) {
	_, base := localslack.NewTestServer(t, localslack.Options{
		Team:  testTeam,
		Users: []localslack.User{{ID: "ULOCAL", Name: "local"}, {ID: "UALICE", Name: "alice"}, {ID: "UBOB", Name: "bob"}},
		Channels: []localslack.Channel{
			{ID: "CLOCAL", Name: "general"},
			{ID: "CENG", Name: "eng"},
			{ID: "GPRIV", Name: "board", IsPrivate: true, Members: []string{"UALICE"}},
			// Lucy was removed from #ops, and its leave event never reached the gateway.
			{ID: "COPS", Name: "ops", BotNotMember: true},
		},
	})
	bot := slack.New(localslack.DefaultToken, slack.OptionAPIURL(base))
	st := workspace.NewLocalAt(t.TempDir())
	// The archive's clock moves past its refresh interval instead of the test sleeping.
	var shift time.Duration
	archive := slackarchive.New(st, 90*24*time.Hour, func() time.Time { return time.Now().Add(shift) })
	r := newTestSlack(t, testDeps{Slack: func(string) tools.SlackAPI { return bot }}, nil).WithArchive(archive)

	// What the gateway wrote as the events arrived, weeks ago: not in any recent history.
	ts := func(daysAgo int) string {
		return fmt.Sprintf("%d.000200", time.Now().Add(-time.Duration(daysAgo)*24*time.Hour).Unix())
	}
	ctx := t.Context()
	for _, m := range []slackarchive.Message{
		{Channel: "GPRIV", TS: ts(30), User: "UALICE", Text: "the acquisition closes in March"},
		{Channel: "CENG", TS: ts(20), User: "UBOB", Text: "the acquisition codename is Heron"},
		{Channel: "CENG", TS: ts(19), User: "UBOB", ThreadTS: ts(20), Text: "migration window is Sunday"},
		{Channel: "CENG", TS: ts(18), User: "UBOB", Text: "the acquisition password is hunter2"},
		{Channel: "COPS", TS: ts(17), User: "UBOB", Text: "the acquisition runbook is ready"},
	} {
		if err := archive.Add(ctx, testTeam, m); err != nil {
			t.Fatal(err)
		}
	}

	// A member of the private channel finds its message; someone who is not does not.
	out := mustRunFor(t, r, "UALICE", tools.SearchSlackHistory, `{"query": "acquisition"}`)
	wantOK(t, out, "Lucy's archive", "#board", "closes in March", "#eng", "codename is Heron", "3 match(es)",
		base+"archives/GPRIV/p"+strings.Replace(ts(30), ".", "", 1))
	out = mustRunFor(t, r, "UBOB", tools.SearchSlackHistory, `{"query": "acquisition"}`)
	wantOK(t, out, "codename is Heron", "2 match(es)")
	if strings.Contains(out.Content, "March") || strings.Contains(out.Content, "#board") || strings.Contains(out.Content, "runbook") {
		t.Fatalf("a private channel's message reached a non-member:\n%s", out.Content)
	}
	// A reply's link opens its thread.
	out = mustRunFor(t, r, "UBOB", tools.SearchSlackHistory, `{"query": "migration window"}`)
	wantOK(t, out, "?thread_ts="+ts(20)+"&cid=CENG")

	// An edit is found by its new text, not its old one; a deleted message is not found.
	if err := archive.Edit(ctx, testTeam, slackarchive.Message{Channel: "CENG", TS: ts(20), User: "UBOB",
		Text: "the acquisition codename is Osprey", Edited: ts(10)}); err != nil {
		t.Fatal(err)
	}
	if err := archive.Delete(ctx, testTeam, "CENG", ts(18)); err != nil {
		t.Fatal(err)
	}
	shift += slackarchive.RefreshInterval // the worker's index catches up
	out = mustRunFor(t, r, "UBOB", tools.SearchSlackHistory, `{"query": "acquisition"}`)
	wantOK(t, out, "codename is Osprey", "1 match(es)")
	if strings.Contains(out.Content, "Heron") || strings.Contains(out.Content, "hunter2") {
		t.Fatalf("an edited message's old text or a deleted message was found:\n%s", out.Content)
	}

	// Lucy left #eng: nothing of it is found.
	if err := archive.Left(ctx, testTeam, "CENG", ts(1)); err != nil {
		t.Fatal(err)
	}
	shift += slackarchive.RefreshInterval
	out = mustRunFor(t, r, "UALICE", tools.SearchSlackHistory, `{"query": "acquisition"}`)
	wantOK(t, out, "closes in March", "1 match(es)")
	if strings.Contains(out.Content, "Osprey") {
		t.Fatalf("a message of a channel Lucy left was found:\n%s", out.Content)
	}
}
