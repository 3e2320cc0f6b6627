package slackaccess

import (
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
)

// newTestAccess is the rule over a localslack workspace: ULOCAL is in #random, UALICE in #plans
// (private), UBOSS is an admin; DLOCAL is ULOCAL's DM with Lucy, DALICE Alice's.
func newTestAccess(t *testing.T) *Access {
	t.Helper()
	_, base := localslack.NewTestServer(t, localslack.Options{
		Team:  "TTEST",
		Users: []localslack.User{{ID: "ULOCAL", Name: "local"}, {ID: "UALICE", Name: "alice"}, {ID: "UBOSS", Name: "boss"}},
		Channels: []localslack.Channel{
			{ID: "CRANDOM", Name: "random", Members: []string{"ULOCAL", localslack.DefaultBotUserID}},
			{ID: "CPLANS", Name: "plans", IsPrivate: true, Members: []string{"UALICE", localslack.DefaultBotUserID}},
			{ID: "DLOCAL", IsIM: true, User: "ULOCAL"},
			{ID: "DALICE", IsIM: true, User: "UALICE"},
		},
	})
	bot := slack.New(localslack.DefaultToken, slack.OptionAPIURL(base))
	return New([]string{"UBOSS"}, func(team string) API {
		if team != "TTEST" {
			return nil
		}
		return bot
	}, func() time.Time { return time.Date(2026, 5, 1, 18, 0, 0, 0, time.UTC) })
}

// Where a job or monitor may post for its creator: a channel they are in, their own DM with Lucy;
// not a channel they are not in, nor someone else's DM, and an admin is no exception for DMs.
func TestScheduleAccess(t *testing.T) {
	a := newTestAccess(t)
	for _, c := range []struct {
		creator, channel string
		allowed          bool
	}{
		{"ULOCAL", "CRANDOM", true},
		{"ULOCAL", "DLOCAL", true},
		{"ULOCAL", "CPLANS", false},
		{"ULOCAL", "DALICE", false},
		{"UBOSS", "CPLANS", true},
		{"UBOSS", "DALICE", false},
	} {
		denied, err := a.ScheduleAccess(t.Context(), "TTEST", c.creator, c.channel)
		if err != nil {
			t.Fatalf("ScheduleAccess(%s, %s): %v", c.creator, c.channel, err)
		}
		if got := denied == ""; got != c.allowed {
			t.Errorf("ScheduleAccess(%s, %s) allowed = %v (%q), want %v", c.creator, c.channel, got, denied, c.allowed)
		}
	}
	if _, err := a.ScheduleAccess(t.Context(), "TOTHER", "ULOCAL", "CRANDOM"); err == nil {
		t.Error("a team without Slack: no error, so the check would pass")
	}
}

// Which schedules a person may see listed: their own, the conversation's, their channels'; an admin
// all; nobody else's DM; an unreadable one only to admins.
func TestScheduleVisible(t *testing.T) {
	a := newTestAccess(t)
	for _, c := range []struct {
		user, creator, channel string
		readable, want         bool
	}{
		{"ULOCAL", "ULOCAL", "CPLANS", true, true},  // their own
		{"ULOCAL", "UALICE", "CHERE", true, true},   // the conversation of the request
		{"ULOCAL", "UALICE", "CRANDOM", true, true}, // a channel they are in
		{"ULOCAL", "UALICE", "CPLANS", true, false},
		{"ULOCAL", "UALICE", "DALICE", true, false},
		{"ULOCAL", "ULOCAL", "CRANDOM", false, false},
		{"UBOSS", "UALICE", "DALICE", false, true},
	} {
		got, err := a.ScheduleVisible(t.Context(), "TTEST", c.user, "CHERE", c.creator, c.channel, c.readable)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("ScheduleVisible(user %s, creator %s, %s, readable %v) = %v, want %v", c.user, c.creator, c.channel, c.readable, got, c.want)
		}
	}
}
