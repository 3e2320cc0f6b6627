package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/tools/slackaccess"
	"github.com/lucy-agent/lucy/workflows"
)

// wsHandoff is the fake that can also answer for a whole workspace.
type wsHandoff struct {
	*fakeHandoff
	ws    WorkspaceStatus
	err   error
	teams []string
}

func (w *wsHandoff) WorkspaceStatus(ctx context.Context, team string, see StatusFilter) (WorkspaceStatus, error) {
	w.teams = append(w.teams, team)
	if w.err != nil {
		return WorkspaceStatus{}, w.err
	}
	out := w.ws
	out.Runs, out.MoreRuns, out.RunsElsewhere = keepRuns(ctx, w.ws.Runs, see)
	out.Jobs, out.MoreJobs, out.JobsElsewhere = keepJobs(ctx, w.ws.Jobs, see)
	return out, nil
}

// "What are you working on?" as a new top-level message, or in a DM without a running lane, is
// answered for the whole workspace; in a thread with a lane, for the thread.
func TestStatusOutsideAThreadAnswersForTheWorkspace(t *testing.T) {
	started := time.Now().Add(-5 * time.Minute)
	next := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	ws := WorkspaceStatus{
		Runs: []WorkspaceRun{
			{ID: "lane:T:C1:1:run:1:1", Channel: "C1", User: "U2", Started: started, Status: &workflows.RunStatus{Objective: "compile the <!channel> numbers", Phase: "running_tools", Turn: 3}},
			{ID: "lane:T:D1:2:run:1:2", Channel: "D1", User: "U1", Started: started},
		},
		Jobs: []ScheduledJob{{Kind: "job", Name: "weekly-report", Channel: "C1", Next: next}, {Kind: "monitor", Name: "api", Creator: "U1", Paused: true}},
	}
	// In C1, C1's run and job are shown, and the asker's own DM run and monitor only counted (others
	// read the answer); in the asker's DM, their own run and monitor are shown and C1's (the
	// gateway knows no membership here) are not.
	inC1 := []string{"Across this workspace I'm working on 2 requests:",
		"• <#C1>: *compile the !channel numbers* (Working through the steps, step 3, for 5m)",
		"• 1 in other conversations you are in (ask me in a DM to list them)", "*Scheduled:*",
		"• job `weekly-report` in <#C1>: next <!date^1796634000^{date_short_pretty} at {time}|2026-12-07 09:00 UTC>"}
	inDM := []string{"Across this workspace I'm working on 1 request:", "• <#D1>: a request (for 5m)", "*Scheduled:*",
		"• monitor `api`: paused"}
	for _, tc := range []struct {
		name, ts, threadTS, channel string
		laneRunning, wantWorkspace  bool
		want                        []string
	}{
		{name: "top-level mention", ts: "1700000000.000300", channel: "C1", wantWorkspace: true, want: inC1},
		{name: "DM without a lane", ts: "1700000000.000300", threadTS: "1700000000.000100", channel: "D1", wantWorkspace: true, want: inDM},
		{name: "thread with a lane", ts: "1700000000.000300", threadTS: "1700000000.000100", channel: "C1", laneRunning: true},
		{name: "thread without a lane", ts: "1700000000.000300", threadTS: "1700000000.000100", channel: "C1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &wsHandoff{fakeHandoff: &fakeHandoff{}, ws: ws}
			key := workflows.LaneKey{Team: testTeam, Channel: tc.channel, ThreadTS: tc.threadTS}
			if tc.laneRunning {
				f.setStatus(key, workflows.LaneStatus{})
			}
			h := newTestGateway(t, f).HTTPHandler(testSecret)
			ev := map[string]any{"type": "message", "user": "U1", "text": "<@ULUCY> what are you working on?", "ts": tc.ts, "channel": tc.channel}
			if tc.threadTS != "" {
				ev["thread_ts"] = tc.threadTS
			}
			if strings.HasPrefix(tc.channel, "D") {
				ev["channel_type"] = "im"
			}
			if w := postEvent(t, h, "EvS", ev); w.Code != http.StatusOK {
				t.Fatalf("status = %d", w.Code)
			}
			msgs := f.gotMessages()
			if len(msgs) != 1 || msgs[0].Control != "status" {
				t.Fatalf("messages = %+v", msgs)
			}
			text := msgs[0].StatusText
			if !tc.wantWorkspace {
				if strings.Contains(text, "workspace") || len(f.teams) != 0 {
					t.Errorf("a thread's status answered for the workspace: %q", text)
				}
				return
			}
			if len(f.teams) != 1 || f.teams[0] != testTeam {
				t.Errorf("asked for teams %v", f.teams)
			}
			for _, want := range tc.want {
				if !strings.Contains(text, want) {
					t.Errorf("answer lacks %q:\n%s", want, text)
				}
			}
			if tc.channel == "D1" && strings.Contains(text, "compile") {
				t.Errorf("a run in a channel the asker is not known to be in was shown: %s", text)
			}
			if strings.Contains(text, "<!channel>") {
				t.Errorf("a mention in an objective reached the answer: %s", text)
			}
		})
	}
}

// When the visibility query fails, the answer falls back to the thread's.
func TestWorkspaceStatusFallsBack(t *testing.T) {
	f := &wsHandoff{fakeHandoff: &fakeHandoff{}, err: errors.New("visibility down")}
	h := newTestGateway(t, f).HTTPHandler(testSecret)
	postEvent(t, h, "EvS", map[string]any{"type": "message", "user": "U1", "text": "<@ULUCY> what are you working on?",
		"ts": "1700000000.000300", "channel": "C1"})
	msgs := f.gotMessages()
	if len(msgs) != 1 || !strings.Contains(msgs[0].StatusText, "not working on anything in this thread") {
		t.Errorf("messages = %+v", msgs)
	}
}

func TestFormatWorkspaceStatusIdle(t *testing.T) {
	got := FormatWorkspaceStatus(WorkspaceStatus{}, time.Now())
	want := "I'm not working on anything in this workspace right now.\n\nNo recurring jobs or monitors are scheduled."
	if got != want {
		t.Errorf("got %q", got)
	}
	got = FormatWorkspaceStatus(WorkspaceStatus{Runs: make([]WorkspaceRun, 10), MoreRuns: 3}, time.Time{})
	if !strings.HasPrefix(got, "Across this workspace I'm working on 13 requests:") || !strings.Contains(got, "…and 3 more") {
		t.Errorf("got %q", got)
	}
}

// sightSlack is Slack's side of the access rule: conversations.info and users.conversations.
type sightSlack struct{ members map[string][]string }

func (f sightSlack) GetConversationsForUserContext(_ context.Context, p *slack.GetConversationsForUserParameters) ([]slack.Channel, string, error) {
	var out []slack.Channel
	for _, id := range f.members[p.UserID] {
		var ch slack.Channel
		ch.ID = id
		out = append(out, ch)
	}
	return out, "", nil
}

func (f sightSlack) GetConversationInfoContext(context.Context, *slack.GetConversationInfoInput) (*slack.Channel, error) {
	return nil, errors.New("not asked")
}

// The attack of F7: Mallory, a member in #general only, asks "what are you working on?". She never
// sees the running request in #exec (private, Alice's) nor Alice's DM objective; in #general, even
// what she may see elsewhere is only counted. An admin sees #exec's in their own DM, and of Alice's
// DM only that a request runs there.
func TestWorkspaceStatusShowsOnlyWhatTheAskerMaySee(t *testing.T) {
	api := sightSlack{members: map[string][]string{"UMAL": {"CGEN"}, "UALICE": {"CGEN", "CEXEC"}, "UADMIN": {"CGEN"}}}
	access := slackaccess.New([]string{"UADMIN"}, func(string) slackaccess.API { return api }, nil)
	started := time.Now().Add(-2 * time.Minute)
	ws := &wsHandoff{fakeHandoff: &fakeHandoff{}, ws: WorkspaceStatus{
		Runs: []WorkspaceRun{
			{ID: "r1", Channel: "CEXEC", User: "UALICE", Started: started, Status: &workflows.RunStatus{Objective: "draft the Q1 layoffs announcement"}},
			{ID: "r2", Channel: "DALICE", User: "UALICE", Started: started, Status: &workflows.RunStatus{Objective: "my divorce lawyer's invoice"}},
			{ID: "r3", Channel: "CGEN", User: "UBOB", Started: started, Status: &workflows.RunStatus{Objective: "summarize the standup"}},
			{ID: "r4", Channel: "DMAL", User: "UMAL", Started: started, Status: &workflows.RunStatus{Objective: "plan my week"}},
		},
		Jobs: []ScheduledJob{{Kind: "job", Name: "layoff-tracker", Channel: "CEXEC", Creator: "UALICE"},
			{Kind: "monitor", Name: "alice-bank", Channel: "DALICE", Creator: "UALICE"}},
	}}
	secret := []string{"layoffs", "CEXEC", "divorce", "DALICE", "layoff-tracker", "alice-bank"}
	ask := func(user, channel string, im bool) string {
		m := workflows.Message{Team: testTeam, Channel: channel, TS: "1700000000.000300", User: user, IsDM: im,
			Text: "what are you working on?"}
		return statusText(t.Context(), ws, m, access)
	}
	for _, c := range []struct {
		name, user, channel string
		im                  bool
		want                []string
	}{
		{"Mallory in #general", "UMAL", "CGEN", false, []string{"working on 2 requests", "<#CGEN>: *summarize the standup*",
			"1 in other conversations you are in"}},
		{"Mallory in her DM", "UMAL", "DMAL", true, []string{"working on 2 requests", "<#CGEN>: *summarize the standup*", "<#DMAL>: *plan my week*"}},
	} {
		text := ask(c.user, c.channel, c.im)
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: the answer lacks %q:\n%s", c.name, w, text)
			}
		}
		for _, x := range secret {
			if strings.Contains(text, x) {
				t.Errorf("%s: the answer shows %q:\n%s", c.name, x, text)
			}
		}
	}
	admin := ask("UADMIN", "DADMIN", true)
	for _, w := range []string{"<#CEXEC>: *draft the Q1 layoffs announcement*", "a request in someone's direct message",
		"job `layoff-tracker` in <#CEXEC>", "a monitor in someone's direct message"} {
		if !strings.Contains(admin, w) {
			t.Errorf("the admin's answer lacks %q:\n%s", w, admin)
		}
	}
	for _, x := range []string{"divorce", "DALICE", "alice-bank"} {
		if strings.Contains(admin, x) {
			t.Errorf("the admin's answer shows %q of Alice's DM:\n%s", x, admin)
		}
	}
}
